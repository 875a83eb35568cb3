#!/usr/bin/env bash
# Make a CA and a webhook serving certificate for the install, tests and local use.
#
#   hack/gen-certs.sh [--ca-dir CA_DIR] DIR [SERVICE] [NAMESPACE]
#
# Writes DIR/ca.crt, DIR/tls.crt and DIR/tls.key: what `kubectl apply -k manifests/` reads from
# manifests/certs. The serving certificate is signed by the CA and valid for 127.0.0.1, ::1,
# localhost and the Service DNS names SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local
# (defaults: fleetsched-webhook, fleetsched-system). Put base64(ca.crt) into the webhook
# configurations' caBundle (the install's kustomization does).
#
# The CA's private key never goes into DIR, whose files kustomize reads and ships:
#   - without --ca-dir, it exists only in a temporary directory while the certificate is signed,
#     and each run makes a new CA (the caBundle changes with the certificate);
#   - with --ca-dir, it is kept in CA_DIR/ca.key (with CA_DIR/ca.crt), which must be outside DIR
#     and outside any kustomization directory; a later run with the same CA_DIR signs a new
#     serving certificate with the same CA, so the caBundle stays as it is.
# Nothing in DIR changes unless every file was made. Needs openssl.
set -euo pipefail

usage="usage: hack/gen-certs.sh [--ca-dir CA_DIR] DIR [SERVICE] [NAMESPACE]"
fail() { echo "gen-certs.sh: $*" >&2; exit 2; }

ca_dir=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --ca-dir) [[ $# -ge 2 && -n $2 ]] || fail "--ca-dir needs a directory ($usage)"; ca_dir=$2; shift 2 ;;
    --ca-dir=*) ca_dir=${1#--ca-dir=}; [[ -n $ca_dir ]] || fail "--ca-dir needs a directory ($usage)"; shift ;;
    --help) echo "$usage"; exit 0 ;;
    --) shift; break ;;
    *) fail "unknown option $1 ($usage)" ;;
  esac
done
[[ $# -ge 1 && $# -le 3 ]] || { echo "$usage" >&2; exit 2; }
dir=$1
service=${2:-fleetsched-webhook}
namespace=${3:-fleetsched-system}
command -v openssl >/dev/null || { echo "gen-certs.sh: openssl not found" >&2; exit 1; }

# An older gen-certs.sh wrote the CA key into DIR; refuse to leave it beside the certificates.
if [[ -e $dir/ca.key ]]; then
  fail "$dir/ca.key: a CA private key in the directory kustomize reads (an older gen-certs.sh wrote it there); move it and $dir/ca.crt into a --ca-dir outside it to keep this CA, or delete it"
fi

inside() { # inside CHILD PARENT: CHILD is PARENT or below it (both resolved, need not exist)
  local child parent
  child=$(realpath -m -- "$1"); parent=$(realpath -m -- "$2")
  [[ $child == "$parent" || $child == "$parent"/* ]]
}

if [[ -n $ca_dir ]]; then
  inside "$ca_dir" "$dir" && fail "--ca-dir $ca_dir: inside $dir, which kustomize reads; keep the CA key elsewhere"
  probe=$(realpath -m -- "$ca_dir")
  while :; do
    for name in kustomization.yaml kustomization.yml Kustomization; do
      [[ -e $probe/$name ]] && fail "--ca-dir $ca_dir: inside the kustomization directory $probe; keep the CA key elsewhere"
    done
    [[ $probe == / ]] && break
    probe=$(dirname -- "$probe")
  done
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ -n $ca_dir && -e $ca_dir/ca.key ]]; then
  [[ -e $ca_dir/ca.crt ]] || fail "$ca_dir/ca.key has no ca.crt beside it"
  key_pub=$(openssl pkey -in "$ca_dir/ca.key" -pubout 2>/dev/null) || fail "$ca_dir/ca.key: not a private key"
  crt_pub=$(openssl x509 -in "$ca_dir/ca.crt" -noout -pubkey 2>/dev/null) || fail "$ca_dir/ca.crt: not a certificate"
  [[ $key_pub == "$crt_pub" ]] || fail "$ca_dir/ca.crt does not belong to $ca_dir/ca.key"
  cp "$ca_dir/ca.key" "$tmp/ca.key"
  cp "$ca_dir/ca.crt" "$tmp/ca.crt"
  ca_origin="the CA in $ca_dir"
else
  (umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
    -keyout "$tmp/ca.key" -out "$tmp/ca.crt" -subj "/CN=fleetsched-webhook-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null)
  ca_origin="a new CA"
fi

cat >"$tmp/ext.cnf" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${service},DNS:${service}.${namespace},DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:::1
EXT

(umask 077 && openssl req -newkey rsa:2048 -nodes -sha256 -keyout "$tmp/tls.key" -out "$tmp/tls.csr" \
  -subj "/CN=${service}.${namespace}.svc" 2>/dev/null)
openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -CAserial "$tmp/ca.srl" -days 3650 -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/tls.crt" 2>/dev/null

if [[ -n $ca_dir && ! -e $ca_dir/ca.key ]]; then
  (umask 077 && mkdir -p "$ca_dir")
  install -m 600 "$tmp/ca.key" "$ca_dir/ca.key"
  install -m 644 "$tmp/ca.crt" "$ca_dir/ca.crt"
fi
mkdir -p "$dir"
install -m 644 "$tmp/ca.crt" "$dir/ca.crt"
install -m 644 "$tmp/tls.crt" "$dir/tls.crt"
install -m 600 "$tmp/tls.key" "$dir/tls.key"
if [[ -n $ca_dir ]]; then
  kept="CA key kept in $ca_dir/ca.key"
else
  kept="CA key discarded; pass --ca-dir to keep it"
fi
echo "wrote $dir/ca.crt $dir/tls.crt $dir/tls.key, signed by $ca_origin (SANs: ${service}.${namespace}.svc, 127.0.0.1, localhost; $kept)"
