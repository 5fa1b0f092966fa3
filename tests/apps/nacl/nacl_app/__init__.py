"""PyNaCl's signatures and sealed boxes, and Argon2 hashes with four lanes: libargon2 runs each
lane in a thread of its own and ends it with pthread_exit, for which glibc loads libgcc_s.so.1
(a system with glibc alone has none: the executable carries one). What /proc/self/maps shows of
libgcc_s tells where it came from."""

import json


def main():
    import argon2
    import nacl.public
    import nacl.pwhash
    import nacl.signing

    key = nacl.signing.SigningKey(bytes(range(32)))
    signed = key.sign(b"ingot")
    verified = key.verify_key.verify(signed)
    secret = nacl.public.PrivateKey.generate()
    sealed = nacl.public.SealedBox(secret.public_key).encrypt(b"sealed")
    opened = nacl.public.SealedBox(secret).decrypt(sealed)
    stored = nacl.pwhash.argon2id.str(b"password", opslimit=2, memlimit=8 * 1024 * 1024)

    hasher = argon2.PasswordHasher(time_cost=2, memory_cost=8 * 1024, parallelism=4)
    digest = hasher.hash("correct horse")
    with open("/proc/self/maps") as maps:
        libgcc = sorted({line.split(None, 5)[5].strip() for line in maps
                         if "libgcc_s" in line and len(line.split(None, 5)) == 6})
    print(json.dumps({
        "signature": signed.signature.hex()[:16],
        "verified": verified.decode(),
        "opened": opened.decode(),
        "pwhash": nacl.pwhash.verify(stored, b"password"),
        "argon2": digest.split("$")[3],
        "argon2_verified": hasher.verify(digest, "correct horse"),
        "libgcc_s": libgcc,
    }))
