#!/usr/bin/env bash
# Make a CA and a webhook serving certificate for tests and local use.
#
#   hack/gen-certs.sh DIR [SERVICE] [NAMESPACE]
#
# Writes DIR/ca.crt, DIR/ca.key, DIR/tls.crt, DIR/tls.key. The serving certificate is signed by
# the CA and valid for 127.0.0.1, ::1, localhost and the Service DNS names
# SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local (defaults: fleetsched-webhook,
# fleetsched-system). Put base64(ca.crt) into the webhook configurations' caBundle.
set -euo pipefail

dir=${1:?usage: hack/gen-certs.sh DIR [SERVICE] [NAMESPACE]}
service=${2:-fleetsched-webhook}
namespace=${3:-fleetsched-system}
mkdir -p "$dir"
command -v openssl >/dev/null || { echo "gen-certs.sh: openssl not found" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" -subj "/CN=fleetsched-webhook-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

cat >"$tmp/ext.cnf" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${service},DNS:${service}.${namespace},DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:::1
EXT

openssl req -newkey rsa:2048 -nodes -sha256 -keyout "$dir/tls.key" -out "$tmp/tls.csr" \
  -subj "/CN=${service}.${namespace}.svc" 2>/dev/null
openssl x509 -req -in "$tmp/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
  -CAserial "$tmp/ca.srl" -days 3650 -sha256 -extfile "$tmp/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
chmod 600 "$dir/ca.key" "$dir/tls.key"
echo "wrote $dir/ca.crt $dir/tls.crt $dir/tls.key (SANs: ${service}.${namespace}.svc, 127.0.0.1, localhost)"
