#!/usr/bin/env bash
# Write one estimator Deployment + Service + NetworkPolicy per member cluster from
# manifests/estimator/template.yaml, the TLS certificates between the scheduler and the estimators,
# and the kustomization that lists them. The names given are the whole set: others are removed.
#
#   hack/gen-estimators.sh [CA-STEP] NAME...   e.g. hack/gen-estimators.sh member1 member2
#   hack/gen-estimators.sh                     (no names: no estimators, still the scheduler's certificate)
#
# CA-STEP, to replace the CA without a moment where pods refuse each other (docs/operations.md: "Rotating the
# estimators' certificates"), one per run and apply, in this order:
#   --stage-ca     make the next CA and trust it beside the current one (leaves still from the current)
#   --promote-ca   sign with the next CA (made now if not staged); keep trusting the one it replaces
#   --drop-old-ca  stop trusting the replaced CA
#
# Output goes to manifests/estimators/ (or $ESTIMATORS_DIR). Each NAME must be the Cluster's name;
# the Service is karmada-scheduler-estimator-NAME, so NAME must be a DNS label of at most 35
# characters (a Service name has at most 63).
#
# TLS (mutual): one CA signs a serving certificate per estimator (SANs: the Service DNS names the
# scheduler dials, karmada-scheduler-estimator-NAME.fleetsched-system.svc[.cluster.local]) and a
# client certificate for the scheduler (CN fleetsched-scheduler). Into the output directory go only
# what the pods mount: tls/ca.crt (public), tls/NAME/tls.{crt,key}, tls/scheduler/tls.{crt,key},
# which the kustomization turns into Secrets karmada-scheduler-estimator-NAME-tls and
# fleetsched-scheduler-estimator-tls. The CA's private key stays outside every directory kustomize
# reads: in $ESTIMATOR_CA_DIR (default: .estimator-ca/ beside manifests/, i.e. at the repository
# root; never committed). A run reuses that CA, so new leaf certificates are trusted by pods still
# running with the old ones. tls/ca.crt is the trust bundle: the signing CA, plus the staged next
# CA or the replaced old one between the steps above.
# Leaf certificates are valid for $ESTIMATOR_CERT_DAYS days (default 365), the CA for 3650.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
template="$root/manifests/estimator/template.yaml"
out="${ESTIMATORS_DIR:-$root/manifests/estimators}"
prefix="karmada-scheduler-estimator-"
namespace="fleetsched-system"
days="${ESTIMATOR_CERT_DAYS:-365}"
step=""
case "${1:-}" in
  --stage-ca | --promote-ca | --drop-old-ca)
    step=$1
    shift
    ;;
esac

for name in "$@"; do
  if [[ ! $name =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]]; then
    echo "gen-estimators.sh: cluster name '$name': must be lower-case letters, digits and '-'," \
      "start with a letter and end with a letter or digit (it becomes part of a Service name)" >&2
    exit 2
  fi
  if (( ${#prefix} + ${#name} > 63 )); then
    echo "gen-estimators.sh: cluster name '$name': ${#name} characters; at most $((63 - ${#prefix}))" \
      "fit in the Service name $prefix$name" >&2
    exit 2
  fi
done
dupes=$(printf '%s\n' "$@" | sort | uniq -d)
if [[ -n $dupes ]]; then
  echo "gen-estimators.sh: cluster name given twice: $dupes" >&2
  exit 2
fi

command -v openssl >/dev/null || { echo "gen-estimators.sh: openssl not found" >&2; exit 1; }
mkdir -p "$out"
ca_dir="${ESTIMATOR_CA_DIR:-$(cd "$out/../.." && pwd)/.estimator-ca}"
case "$(cd "$(dirname "$ca_dir")" 2>/dev/null && pwd)/$(basename "$ca_dir")/" in
  "$(cd "$out/.." && pwd)"/*)
    echo "gen-estimators.sh: ESTIMATOR_CA_DIR=$ca_dir is inside $(cd "$out/.." && pwd), which kustomize" \
      "reads: keep the CA's private key elsewhere" >&2
    exit 2
    ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tls"

# The CA state, worked on in $tmp/ca and put back once everything is written: ca.{crt,key} signs,
# next-ca.{crt,key} is staged, old-ca.crt was replaced (trusted, its key gone).
mkdir -p "$tmp/ca"
for file in ca.crt ca.key next-ca.crt next-ca.key old-ca.crt; do
  if [[ -s $ca_dir/$file ]]; then cp "$ca_dir/$file" "$tmp/ca/"; fi
done
make_ca() {  # make_ca NAME: a new CA as $tmp/ca/NAME.{crt,key}
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -sha256 \
    -keyout "$tmp/ca/$1.key" -out "$tmp/ca/$1.crt" -subj "/CN=fleetsched-estimator-ca-$(date -u +%Y%m%d)-$(openssl rand -hex 4)" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}
if [[ ! -s $tmp/ca/ca.crt || ! -s $tmp/ca/ca.key ]]; then
  rm -f "$tmp/ca/"*
  make_ca ca
fi
case "$step" in
  --stage-ca)
    make_ca next-ca
    ;;
  --promote-ca)
    [[ -s $tmp/ca/next-ca.key ]] || make_ca next-ca
    mv "$tmp/ca/ca.crt" "$tmp/ca/old-ca.crt"
    rm -f "$tmp/ca/ca.key"
    mv "$tmp/ca/next-ca.crt" "$tmp/ca/ca.crt"
    mv "$tmp/ca/next-ca.key" "$tmp/ca/ca.key"
    ;;
  --drop-old-ca)
    rm -f "$tmp/ca/old-ca.crt"
    ;;
esac

# issue DIR CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
issue() {
  local dir="$tmp/tls/$1" cn=$2 usage=$3 sans=${4:-}
  mkdir -p "$dir"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [[ -n $sans ]] && echo "subjectAltName=$sans"
  } >"$dir/ext.cnf"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -keyout "$dir/tls.key" \
    -out "$dir/tls.csr" -subj "/CN=$cn" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA "$tmp/ca/ca.crt" -CAkey "$tmp/ca/ca.key" -CAcreateserial \
    -CAserial "$tmp/ca.srl" -days "$days" -sha256 -extfile "$dir/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
  rm -f "$dir/ext.cnf" "$dir/tls.csr"
  chmod 600 "$dir/tls.key"
}
issue scheduler fleetsched-scheduler clientAuth
for name in "$@"; do
  service="$prefix$name"
  issue "$name" "$service.$namespace.svc" serverAuth \
    "DNS:$service.$namespace.svc.cluster.local,DNS:$service.$namespace.svc,DNS:$service.$namespace,DNS:$service"
done
for file in ca.crt next-ca.crt old-ca.crt; do  # the trust bundle
  if [[ -s $tmp/ca/$file ]]; then cat "$tmp/ca/$file"; fi
done >"$tmp/tls/ca.crt"

find "$out" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml -delete
rm -rf "$out/tls"
{
  echo "# Written by hack/gen-estimators.sh${*:+ $*}"
  echo "# One accurate estimator per member cluster (none until you name them: hack/gen-estimators.sh NAME...)."
  echo "# The certificates (tls/) are written by the same run and never committed: run it before"
  echo "# kubectl apply -k manifests/ (the Secrets' names get a content hash, so new certificates roll the pods)."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  if (( $# == 0 )); then
    echo "resources: []"
  else
    echo "resources:"
    for name in "$@"; do
      echo "  - $name.yaml"
    done
  fi
  echo "secretGenerator:"
  echo "  # the scheduler's client certificate and the CA it checks the estimators' certificates with"
  echo "  - name: fleetsched-scheduler-estimator-tls"
  echo "    namespace: $namespace"
  echo "    files:"
  echo "      - tls.crt=tls/scheduler/tls.crt"
  echo "      - tls.key=tls/scheduler/tls.key"
  echo "      - ca.crt=tls/ca.crt"
  for name in "$@"; do
    echo "  - name: $prefix$name-tls"
    echo "    namespace: $namespace"
    echo "    files:"
    echo "      - tls.crt=tls/$name/tls.crt"
    echo "      - tls.key=tls/$name/tls.key"
    echo "      - ca.crt=tls/ca.crt"
  done
} >"$tmp/kustomization.yaml"
for name in "$@"; do
  {
    echo "# Generated by hack/gen-estimators.sh from manifests/estimator/template.yaml; edit the template."
    grep -v '^#' "$template" | sed "s/CLUSTER_NAME/$name/g"
  } >"$tmp/$name.yaml"
done

# Everything is made: put it in place (the CA last, so a failed run leaves the previous one).
for name in "$@"; do
  mv "$tmp/$name.yaml" "$out/$name.yaml"
done
mv "$tmp/tls" "$out/tls"
mv "$tmp/kustomization.yaml" "$out/kustomization.yaml"
mkdir -p "$ca_dir"
chmod 700 "$ca_dir"
rm -f "$ca_dir/next-ca.crt" "$ca_dir/next-ca.key" "$ca_dir/old-ca.crt"
for file in "$tmp/ca/"*; do
  case "$file" in
    *.key) install -m 600 "$file" "$ca_dir/" ;;
    *) install -m 644 "$file" "$ca_dir/" ;;
  esac
done
trusted=$(grep -c 'BEGIN CERTIFICATE' "$out/tls/ca.crt")
echo "wrote $out/kustomization.yaml ($# estimators), certificates in $out/tls (trusting $trusted CA(s);" \
  "CA keys in $ca_dir)"
