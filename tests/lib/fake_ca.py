"""istiod's CA for tests (issue 48): /istio.v1.auth.IstioCertificateService/CreateCertificate,
served by fake_istiod.py beside ADS on the same port, as istiod serves both on 15012. It does
what istiod's CA does that a client can see (../reference/hbone.md §3):

  - the caller is known by its bearer token (a token -> SPIFFE id table the test sets), and must
    send the cluster's `clusterid`; else UNAUTHENTICATED;
  - it signs the CSR's public key (the request's signature checked) with the test CA's key,
    writing the identity itself (the caller's, or with `ImpersonatedIdentity` in the metadata an
    identity the caller may impersonate: a trusted node account, and an identity allowed for
    it); else UNAUTHENTICATED "request impersonation authentication failure";
  - a TTL over its maximum is INVALID_ARGUMENT, zero means its default;
  - the answer: the leaf and the root, PEM each.

Misbehaviours a test can ask for: a leaf naming another identity (`wrong_san`), a leaf carrying
another key than the request's (`wrong_key`), every call failing with a status (`fail`: e.g.
"UNAVAILABLE", null to stop), every answer late (`delay_ms`). Every call is recorded (headers, the CSR's names)."""
import datetime
import threading

import time

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import ca_pb2


class CA:
    def __init__(self, cert_path, key_path):
        self.lock = threading.Lock()
        with open(cert_path, "rb") as f:
            self.root_pem = f.read()
        self.root = x509.load_pem_x509_certificate(self.root_pem)
        with open(key_path, "rb") as f:
            self.key = serialization.load_pem_private_key(f.read(), password=None)
        self.tokens = {}        # bearer token -> the caller's SPIFFE id
        self.cluster = "test-cluster"
        self.trusted = set()    # callers that may impersonate (CA_TRUSTED_NODE_ACCOUNTS)
        self.allowed = set()    # identities they may ask for (a pod of it on their node)
        self.max_ttl = 7 * 86400
        self.default_ttl = 86400
        self.wrong_san = None
        self.wrong_key = False
        self.fail = None
        self.delay_ms = 0       # every answer this late (a CA under load)
        self.calls = []

    def configure(self, cmd):
        with self.lock:
            for k in ("tokens", "cluster", "max_ttl", "default_ttl", "wrong_san", "wrong_key",
                      "fail", "delay_ms"):
                if k in cmd:
                    setattr(self, k, cmd[k])
            if "trusted" in cmd:
                self.trusted = set(cmd["trusted"])
            if "allowed" in cmd:
                self.allowed = set(cmd["allowed"])

    def state(self):
        with self.lock:
            return {"calls": list(self.calls)}

    def create(self, request, context):
        md = dict(context.invocation_metadata())
        auth = md.get("authorization", "")
        record = {"authorization": auth, "clusterid": md.get("clusterid"),
                  "ttl": request.validity_duration, "impersonate": None, "csr_cn": None,
                  "csr_uris": [], "result": None}
        try:
            return self._create(request, context, md, auth, record)
        finally:
            with self.lock:
                self.calls.append(record)

    def _abort(self, context, record, code, message):
        record["result"] = "%s: %s" % (code.name, message)
        context.abort(code, message)

    def _create(self, request, context, md, auth, record):
        with self.lock:
            caller = self.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
            cluster, trusted, allowed = self.cluster, set(self.trusted), set(self.allowed)
            max_ttl, default_ttl = self.max_ttl, self.default_ttl
            wrong_san, wrong_key, fail = self.wrong_san, self.wrong_key, self.fail
            delay_ms = self.delay_ms
        if delay_ms:
            time.sleep(delay_ms / 1000)
        if fail:
            self._abort(context, record, grpc.StatusCode[fail], "the test's CA fails: %s" % fail)
        if caller is None:
            self._abort(context, record, grpc.StatusCode.UNAUTHENTICATED, "authenticate failure")
        if md.get("clusterid") != cluster:
            self._abort(context, record, grpc.StatusCode.UNAUTHENTICATED,
                        "client claims to be in cluster %r" % md.get("clusterid"))
        try:
            csr = x509.load_pem_x509_csr(request.csr.encode())
        except ValueError as e:
            self._abort(context, record, grpc.StatusCode.INVALID_ARGUMENT, "bad CSR: %s" % e)
        if not csr.is_signature_valid:
            self._abort(context, record, grpc.StatusCode.INVALID_ARGUMENT, "CSR signature")
        cns = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        record["csr_cn"] = cns[0].value if cns else None
        try:
            san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            record["csr_uris"] = san.get_values_for_type(x509.UniformResourceIdentifier)
        except x509.ExtensionNotFound:
            pass
        identity = caller
        if "ImpersonatedIdentity" in request.metadata.fields:
            want = request.metadata.fields["ImpersonatedIdentity"].string_value
            record["impersonate"] = want
            if caller not in trusted or want not in allowed:
                self._abort(context, record, grpc.StatusCode.UNAUTHENTICATED,
                            "request impersonation authentication failure")
            identity = want
        ttl = request.validity_duration or default_ttl
        if ttl > max_ttl:
            self._abort(context, record, grpc.StatusCode.INVALID_ARGUMENT,
                        "requested TTL %ds is greater than the max allowed TTL %ds" % (ttl, max_ttl))
        key = ec.generate_private_key(ec.SECP256R1()).public_key() if wrong_key else csr.public_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        leaf = (x509.CertificateBuilder()
                .subject_name(x509.Name([]))
                .issuer_name(self.root.subject)
                .public_key(key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=1))
                .not_valid_after(now + datetime.timedelta(seconds=ttl))
                .add_extension(x509.SubjectAlternativeName(
                    [x509.UniformResourceIdentifier(wrong_san or identity)]), critical=True)
                .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False,
                                             False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH,
                                                      x509.ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        record["result"] = "OK %s" % (wrong_san or identity)
        return ca_pb2.IstioCertificateResponse(cert_chain=[
            leaf.public_bytes(serialization.Encoding.PEM).decode(), self.root_pem.decode()])


def handler(ca):
    return grpc.method_handlers_generic_handler(
        "istio.v1.auth.IstioCertificateService",
        {"CreateCertificate": grpc.unary_unary_rpc_method_handler(
            ca.create, request_deserializer=ca_pb2.IstioCertificateRequest.FromString,
            response_serializer=ca_pb2.IstioCertificateResponse.SerializeToString)})
