//! The `ingot-launcher` executable: everything is in the library (see `lib.rs`).

fn main() {
    ingot_launcher::main()
}
