//! The system's CA certificates for OpenSSL, wherever the distribution keeps them.
//!
//! OpenSSL looks for certificates where it was configured to (`OPENSSLDIR`): a runtime's under
//! `/etc/ssl`, a Debian build's under `/usr/lib/ssl`. RHEL, Fedora and Amazon Linux keep their
//! bundle under `/etc/pki`, SUSE and Alpine elsewhere again, so there `ssl.create_default_context()`
//! would trust nothing. When neither `SSL_CERT_FILE` nor `SSL_CERT_DIR` is set (they always win),
//! the launcher points `SSL_CERT_FILE` at the first bundle of [`CA_FILES`] that exists, in the C
//! environment the application's OpenSSL and its children read, after the interpreter copied
//! `os.environ` (the application sees the environment it was given). On Debian and Ubuntu that
//! is the bundle OpenSSL would have read anyway.

use std::path::Path;

/// The variables through which a user chooses OpenSSL's certificates.
pub const VARIABLES: [&str; 2] = ["SSL_CERT_FILE", "SSL_CERT_DIR"];

/// CA bundles by distribution, most common first (the same places Go's crypto/x509 looks).
pub const CA_FILES: [&str; 6] = [
    "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Gentoo, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL 6+, Amazon Linux
    "/etc/ssl/ca-bundle.pem",             // openSUSE, SLES
    "/etc/pki/tls/cacert.pem",            // OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7+
    "/etc/ssl/cert.pem",                  // Alpine
];

/// The bundle to point OpenSSL at, given what the environment says (`given`) and which files
/// exist: None when the user chose (either variable set) or no bundle exists.
pub fn bundle(
    given: impl Fn(&str) -> bool,
    exists: impl Fn(&Path) -> bool,
) -> Option<&'static str> {
    if VARIABLES.iter().any(|name| given(name)) {
        return None;
    }
    CA_FILES.into_iter().find(|file| exists(Path::new(file)))
}

/// Sets `SSL_CERT_FILE` to the system's bundle when the user set neither variable.
pub fn point_openssl_at_the_systems_bundle() {
    if let Some(file) = bundle(|name| std::env::var_os(name).is_some(), Path::is_file) {
        // SAFETY: called where the launcher sets its other variables for the children; the
        // read-ahead threads read the environment only through Rust's std, which serializes
        // with this.
        std::env::set_var(VARIABLES[0], file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bundle_that_exists_is_chosen() {
        let rhel7 = |path: &Path| path.starts_with("/etc/pki/ca-trust");
        assert_eq!(
            bundle(|_| false, rhel7),
            Some("/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem")
        );
        assert_eq!(bundle(|_| false, |_| true), Some(CA_FILES[0]));
        assert_eq!(bundle(|_| false, |_| false), None);
    }

    #[test]
    fn either_variable_set_by_the_user_wins() {
        assert_eq!(bundle(|name| name == "SSL_CERT_DIR", |_| true), None);
        assert_eq!(bundle(|name| name == "SSL_CERT_FILE", |_| true), None);
    }
}
