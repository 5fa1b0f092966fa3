"""cryptography: a Fernet round trip, the X.509 certificates given as files parsed (subject,
SAN, extensions) and the server's signature verified with the CA's key, and a self-signed
certificate built, serialized and parsed back.

    crypto-app CA.pem SERVER.pem
"""

import datetime
import json
import sys


def main():
    import cryptography
    from cryptography import x509
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    fernet = Fernet(Fernet.generate_key())
    token = fernet.encrypt(b"secret from memory")

    with open(sys.argv[1], "rb") as file:
        ca = x509.load_pem_x509_certificate(file.read())
    with open(sys.argv[2], "rb") as file:
        server = x509.load_pem_x509_certificate(file.read())
    ca.public_key().verify(server.signature, server.tbs_certificate_bytes,
                           ec.ECDSA(server.signature_hash_algorithm))
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "made in the room")])
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    made = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(4242)
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    parsed = x509.load_pem_x509_certificate(made.public_bytes(serialization.Encoding.PEM))

    from cryptography.hazmat.bindings._rust import openssl as rust_openssl
    print(json.dumps({
        "fernet": fernet.decrypt(token).decode(),
        "ca_subject": ca.subject.rfc4514_string(),
        "server_subject": server.subject.rfc4514_string(),
        "server_issuer_is_ca": server.issuer == ca.subject,
        "san_ips": [str(ip) for ip in san.get_values_for_type(x509.IPAddress)],
        "ca_basic_constraints": ca.extensions.get_extension_for_class(
            x509.BasicConstraints).value.ca,
        "made": [parsed.subject.rfc4514_string(), parsed.serial_number,
                 parsed.fingerprint(hashes.SHA256()) == made.fingerprint(hashes.SHA256())],
        "version": cryptography.__version__,
        "openssl": rust_openssl.openssl_version_text(),
        "rust": sys.modules["cryptography.hazmat.bindings._rust"].__file__,
    }))
