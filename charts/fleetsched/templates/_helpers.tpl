{{/*
The chart's templates read the kustomize install (files/, copied from manifests/ by
hack/gen_chart.py) and change only what a value selects. These helpers load and emit its objects.
*/}}

{{/*
The documents of one file under files/, as a JSON list, fleetsched-system replaced by the release
namespace. Arguments: (list $ path) or (list $ path replacements), replacements a dict of words.
*/}}
{{- define "fleetsched.docs" -}}
{{- $ctx := index . 0 -}}
{{- $path := index . 1 -}}
{{- $text := $ctx.Files.Get $path -}}
{{- if not $text -}}{{- fail (printf "chart file %s is missing (run hack/gen_chart.py)" $path) -}}{{- end -}}
{{- $text = replace "fleetsched-system" $ctx.Release.Namespace $text -}}
{{- if gt (len .) 2 -}}{{- range $old, $new := index . 2 -}}{{- $text = replace $old $new $text -}}{{- end -}}{{- end -}}
{{- $docs := list -}}
{{- range $part := regexSplit "(?m)^---[ \\t]*$" $text -1 -}}
{{- $doc := fromYaml $part -}}
{{- if hasKey $doc "Error" -}}{{- fail (printf "%s: %s" $path $doc.Error) -}}{{- end -}}
{{- if $doc -}}{{- $docs = append $docs $doc -}}{{- end -}}
{{- end -}}
{{- toJson $docs -}}
{{- end -}}

{{/* One object as a YAML document, with the chart's labels. Arguments: (list $ object). */}}
{{- define "fleetsched.emit" -}}
{{- $ctx := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $labels := default (dict) $obj.metadata.labels -}}
{{- $_ := set $labels "app.kubernetes.io/part-of" "fleetsched" -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" $ctx.Release.Service -}}
{{- $_ := set $labels "app.kubernetes.io/instance" $ctx.Release.Name -}}
{{- $_ := set $labels "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name ($ctx.Chart.Version | replace "+" "_")) -}}
{{- $_ := set $obj.metadata "labels" $labels }}
---
{{ toYaml $obj }}
{{ end -}}

{{- define "fleetsched.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
A Deployment's first container with the chart's image, its args replaced (when given) and extra
args appended, and resources when set. Arguments: (list $ deployment args extraArgs resources);
args may be nil to keep the file's. Changes the deployment in place.
*/}}
{{- define "fleetsched.container" -}}
{{- $ctx := index . 0 -}}
{{- $d := index . 1 -}}
{{- $c := index $d.spec.template.spec.containers 0 -}}
{{- $_ := set $c "image" (include "fleetsched.image" $ctx) -}}
{{- $_ := set $c "imagePullPolicy" $ctx.Values.image.pullPolicy -}}
{{- $args := index . 2 | default $c.args -}}
{{- $_ := set $c "args" (concat $args (index . 3 | default list)) -}}
{{- with index . 4 }}{{- $_ := set $c "resources" . -}}{{- end -}}
{{- end -}}

{{/*
A strategic-merge list patch, as kustomize applies one: items are matched by the merge key (name
for volumes, mountPath for volumeMounts); one with `$patch: delete` removes the base's item, the
others come first, then the base's items the patch does not name. Arguments: (list base patch key);
returns a JSON list.
*/}}
{{- define "fleetsched.mergeByKey" -}}
{{- $base := index . 0 | default list -}}
{{- $patch := index . 1 | default list -}}
{{- $key := index . 2 -}}
{{- $out := list -}}
{{- $named := list -}}
{{- range $patch }}{{- $named = append $named (get . $key) -}}{{- end -}}
{{- range $patch }}{{- if ne (get . "$patch") "delete" }}{{- $out = append $out . -}}{{- end -}}{{- end -}}
{{- range $base }}{{- if not (has (get . $key) $named) }}{{- $out = append $out . -}}{{- end -}}{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The JSON patch operations of a kustomize Component's first patch (overlays/NAME/kustomization.yaml)
applied to a Deployment's first container: `add .../args/-` appends, `test`/`replace .../args/N`
check and replace one argument, `add .../env` and `add .../readinessProbe` set. `/spec/replicas` is the chart's value, not the file's.
Arguments: (list $ componentFile deployment replicas).
*/}}
{{- define "fleetsched.component" -}}
{{- $ctx := index . 0 -}}
{{- $d := index . 2 -}}
{{- $kust := index (include "fleetsched.docs" (list $ctx (index . 1)) | fromJsonArray) 0 -}}
{{- $ops := (index $kust.patches 0).patch | fromYamlArray -}}
{{- $c := index $d.spec.template.spec.containers 0 -}}
{{- range $op := $ops -}}
{{- $at := regexFind "/containers/0/args/[0-9]+$" .path | regexFind "[0-9]+$" -}}
{{- if and $at (eq .op "test") -}}
{{- if ne (index $c.args (int $at)) .value -}}{{- fail (printf "%s: %s is not %q (the overlay and its base disagree)" (index $ 1) .path .value) -}}{{- end -}}
{{- else if and $at (eq .op "replace") -}}
{{- $replaced := list -}}
{{- range $i, $arg := $c.args -}}{{- $replaced = append $replaced (eq $i (int $at) | ternary $op.value $arg) -}}{{- end -}}
{{- $_ := set $c "args" $replaced -}}
{{- else if hasSuffix "/args/-" .path -}}{{- $_ := set $c "args" (append $c.args .value) -}}
{{- else if hasSuffix "/containers/0/env" .path -}}{{- $_ := set $c "env" .value -}}
{{- else if hasSuffix "/containers/0/readinessProbe" .path -}}{{- $_ := set $c "readinessProbe" .value -}}
{{- else if eq .path "/spec/replicas" -}}{{- $_ := set $d.spec "replicas" (index $ 3) -}}
{{- else -}}{{- fail (printf "%s: the chart does not know the operation %s %s" (index $ 1) .op .path) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The mode, checked. */}}
{{- define "fleetsched.mode" -}}
{{- $modes := list "standalone" "besideKarmada" "insteadOfKarmada" -}}
{{- if not (has .Values.mode $modes) -}}
{{- fail (printf "mode: %q is not one of %s" .Values.mode (join ", " $modes)) -}}
{{- end -}}
{{- if not (has .Values.certificates.source (list "generate" "cert-manager")) -}}
{{- fail (printf "certificates.source: %q is not one of generate, cert-manager" .Values.certificates.source) -}}
{{- end -}}
{{- if and .Values.sharding.enabled (eq .Values.mode "insteadOfKarmada") -}}
{{- fail "sharding.enabled: not with mode insteadOfKarmada: sharded replicas hold member Leases, not karmada-scheduler's, so they and a running karmada-scheduler would both schedule" -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/*
A CA for the named Secret: the one already in the cluster (kept on upgrade), else a new one.
Arguments: (list $ secretName commonName); returns JSON {cert, key} in PEM.
*/}}
{{- define "fleetsched.ca" -}}
{{- $ctx := index . 0 -}}
{{- $found := lookup "v1" "Secret" $ctx.Release.Namespace (index . 1) -}}
{{- if and $found (hasKey (default (dict) $found.data) "tls.key") -}}
{{- dict "cert" (index $found.data "tls.crt" | b64dec) "key" (index $found.data "tls.key" | b64dec) | toJson -}}
{{- else -}}
{{- $ca := genCA (index . 2) (int $ctx.Values.certificates.validityDays) -}}
{{- dict "cert" $ca.Cert "key" $ca.Key | toJson -}}
{{- end -}}
{{- end -}}

{{/*
Whether the descheduler runs: descheduler.enabled, or when it is unset (null), as the kustomize
installs do: on in the Karmada modes (overlays/beside-karmada has it), off standalone (an opt-in
Component there). Returns "true" or "false".
*/}}
{{- define "fleetsched.deschedulerEnabled" -}}
{{- $value := .Values.descheduler.enabled -}}
{{- if kindIs "invalid" $value -}}
{{- ne (include "fleetsched.mode" .) "standalone" | toString -}}
{{- else -}}
{{- $value | toString -}}
{{- end -}}
{{- end -}}
