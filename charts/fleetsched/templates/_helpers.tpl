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

{{/*
The release's full name, as common charts make it: fullnameOverride, else the release name when it
contains the chart's name (nameOverride), else RELEASE-NAME; at most 63 characters. It prefixes the
cluster-scoped objects' names (release `fleetsched`: the manifests' names).
*/}}
{{- define "fleetsched.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The name of a component's ServiceAccount: its serviceAccount.name, else the manifests' name.
Arguments: (list $ manifestsName), manifestsName fleetsched-scheduler, -descheduler or -controller.
*/}}
{{- define "fleetsched.serviceAccountName" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $component := trimPrefix "fleetsched-" $name -}}
{{- (index $ctx.Values $component).serviceAccount.name | default $name -}}
{{- end -}}

{{/*
A map of labels or annotations with every value a string (`--set podAnnotations.replicas=1` gives
a number), as JSON. Arguments: a list of maps, the first map's keys winning over the next's.
*/}}
{{- define "fleetsched.strings" -}}
{{- $out := dict -}}
{{- range $m := . -}}
{{- range $k, $v := (default (dict) $m) -}}{{- if not (hasKey $out $k) -}}{{- $_ := set $out $k (toString $v) -}}{{- end -}}{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
One object as a YAML document, with the chart's labels and what the chart's values say of every
object of its kind (the habits of common charts), so each template need not: release-scoped names
for the cluster-scoped objects, the ServiceAccount settings, the pod settings of a Deployment
(imagePullSecrets, podAnnotations, podLabels, nodeSelector, tolerations, affinity,
priorityClassName; the component is the first container's name) and its PodDisruptionBudget, the
monitoring labels. Arguments: (list $ object).
*/}}
{{- define "fleetsched.emit" -}}
{{- $ctx := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $V := $ctx.Values -}}
{{- $full := include "fleetsched.fullname" $ctx -}}
{{- $emit := true -}}
{{- $accounts := list "fleetsched-scheduler" "fleetsched-descheduler" "fleetsched-controller" -}}
{{- $clusterScoped := list "ClusterRole" "ClusterRoleBinding" "MutatingWebhookConfiguration" "ValidatingWebhookConfiguration" "ValidatingAdmissionPolicy" "ValidatingAdmissionPolicyBinding" -}}
{{- if and (has $obj.kind $clusterScoped) (hasPrefix "fleetsched-" $obj.metadata.name) -}}
{{- $_ := set $obj.metadata "name" (printf "%s%s" $full (trimPrefix "fleetsched" $obj.metadata.name)) -}}
{{- end -}}
{{- with $obj.roleRef -}}
{{- if and (eq .kind "ClusterRole") (hasPrefix "fleetsched-" .name) -}}
{{- $_ := set . "name" (printf "%s%s" $full (trimPrefix "fleetsched" .name)) -}}
{{- end -}}
{{- end -}}
{{- if eq $obj.kind "ValidatingAdmissionPolicyBinding" -}}
{{- $_ := set $obj.spec "policyName" (printf "%s%s" $full (trimPrefix "fleetsched" $obj.spec.policyName)) -}}
{{- end -}}
{{- if eq $obj.kind "ValidatingAdmissionPolicy" -}}
{{- $account := include "fleetsched.serviceAccountName" (list $ctx "fleetsched-controller") -}}
{{- range $obj.spec.matchConditions -}}
{{- $_ := set . "expression" (replace "':fleetsched-controller'" (printf "':%s'" $account) .expression) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $obj.kind "ServiceAccount") (has $obj.metadata.name $accounts) -}}
{{- $sa := (index $V (trimPrefix "fleetsched-" $obj.metadata.name)).serviceAccount -}}
{{- $emit = $sa.create -}}
{{- $_ := set $obj.metadata "name" (include "fleetsched.serviceAccountName" (list $ctx $obj.metadata.name)) -}}
{{- with include "fleetsched.strings" (list $sa.annotations $obj.metadata.annotations) | fromJson -}}{{- $_ := set $obj.metadata "annotations" . -}}{{- end -}}
{{- end -}}
{{- range $obj.subjects -}}
{{- if and (eq .kind "ServiceAccount") (has .name $accounts) -}}
{{- $_ := set . "name" (include "fleetsched.serviceAccountName" (list $ctx .name)) -}}
{{- end -}}
{{- end -}}
{{- if has $obj.kind (list "MutatingWebhookConfiguration" "ValidatingWebhookConfiguration") -}}
{{- $found := lookup "admissionregistration.k8s.io/v1" $obj.kind "" $obj.metadata.name -}}
{{- if $found -}}
{{- $owner := default (dict) $found.metadata.annotations -}}
{{- if or (ne (get $owner "meta.helm.sh/release-name") $ctx.Release.Name) (ne (get $owner "meta.helm.sh/release-namespace") $ctx.Release.Namespace) -}}
{{- $by := "not by Helm (by `kubectl apply -k manifests/` or hack/dev_up.py, say)" -}}
{{- with get $owner "meta.helm.sh/release-name" -}}{{- $by = printf "by release %s in namespace %s" . (get $owner "meta.helm.sh/release-namespace") -}}{{- end -}}
{{- fail (printf "%s %s: made %s, not by this release: the API server would merge its webhooks and this release's by name (one registered by URL and by Service fails: \"exactly one of url or service is required\"). Choose another release name or fullnameOverride (the name is FULLNAME-%s), or delete it" $obj.kind $obj.metadata.name $by (trimPrefix (printf "%s-" $full) $obj.metadata.name)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (has $obj.kind (list "ServiceMonitor" "PrometheusRule")) $V.monitoring.labels -}}
{{- $_ := set $obj.metadata "labels" (include "fleetsched.strings" (list $obj.metadata.labels $V.monitoring.labels) | fromJson) -}}
{{- end -}}
{{- $pdb := dict -}}
{{- if eq $obj.kind "Deployment" -}}
{{- $spec := $obj.spec.template.spec -}}
{{- if has $spec.serviceAccountName $accounts -}}
{{- $_ := set $spec "serviceAccountName" (include "fleetsched.serviceAccountName" (list $ctx $spec.serviceAccountName)) -}}
{{- end -}}
{{- $component := (index $spec.containers 0).name -}}
{{- $cv := index $V (eq $component "estimator" | ternary "estimators" $component) -}}
{{- $meta := $obj.spec.template.metadata -}}
{{- $_ := set $meta "labels" (include "fleetsched.strings" (list $meta.labels $cv.podLabels $V.podLabels) | fromJson) -}}
{{- with include "fleetsched.strings" (list $cv.podAnnotations $V.podAnnotations $meta.annotations) | fromJson -}}{{- $_ := set $meta "annotations" . -}}{{- end -}}
{{- with merge (deepCopy $cv.nodeSelector) (deepCopy $V.nodeSelector) (deepCopy (default (dict) $spec.nodeSelector)) -}}{{- $_ := set $spec "nodeSelector" . -}}{{- end -}}
{{- with $cv.tolerations | default $V.tolerations -}}{{- $_ := set $spec "tolerations" . -}}{{- end -}}
{{- with $cv.affinity | default $V.affinity -}}
{{- $affinity := default (dict) $spec.affinity -}}
{{- range $key, $value := . -}}{{- $_ := set $affinity $key $value -}}{{- end -}}
{{- $_ := set $spec "affinity" $affinity -}}
{{- end -}}
{{- with $cv.priorityClassName | default $V.priorityClassName -}}{{- $_ := set $spec "priorityClassName" . -}}{{- end -}}
{{- with $V.imagePullSecrets -}}
{{- $secrets := list -}}
{{- range . -}}{{- $secrets = append $secrets (kindIs "string" . | ternary (dict "name" .) .) -}}{{- end -}}
{{- $_ := set $spec "imagePullSecrets" $secrets -}}
{{- end -}}
{{- if $V.podDisruptionBudget.enabled -}}
{{- $budget := dict "selector" (dict "matchLabels" $obj.spec.selector.matchLabels) -}}
{{- if kindIs "invalid" $V.podDisruptionBudget.minAvailable -}}
{{- $_ := set $budget "maxUnavailable" $V.podDisruptionBudget.maxUnavailable -}}
{{- else -}}
{{- $_ := set $budget "minAvailable" $V.podDisruptionBudget.minAvailable -}}
{{- end -}}
{{- $pdb = dict "apiVersion" "policy/v1" "kind" "PodDisruptionBudget" "spec" $budget
      "metadata" (dict "name" $obj.metadata.name "namespace" $obj.metadata.namespace "labels" (deepCopy (default (dict) $obj.metadata.labels))) -}}
{{- end -}}
{{- end -}}
{{- $objs := list -}}
{{- if $emit -}}{{- $objs = append $objs $obj -}}{{- end -}}
{{- if $pdb -}}{{- $objs = append $objs $pdb -}}{{- end -}}
{{- range $o := $objs -}}
{{- $labels := default (dict) $o.metadata.labels -}}
{{- $_ := set $labels "app.kubernetes.io/part-of" "fleetsched" -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" $ctx.Release.Service -}}
{{- $_ := set $labels "app.kubernetes.io/instance" $ctx.Release.Name -}}
{{- $_ := set $labels "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name ($ctx.Chart.Version | replace "+" "_")) -}}
{{- $_ := set $o.metadata "labels" $labels }}
---
{{ toYaml $o }}
{{ end -}}
{{- end -}}

{{- define "fleetsched.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository: required: fleetsched publishes no image; build one (hack/build-image.sh) and push it to a registry your cluster pulls from, then --set image.repository=REGISTRY/fleetsched" -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
A Deployment's first container with the chart's image, its args replaced (when given), the
featureGates value (commands that take --feature-gates) and extra args appended, and resources
when set. Arguments: (list $ deployment args extraArgs resources);
args may be nil to keep the file's. Changes the deployment in place.
*/}}
{{- define "fleetsched.container" -}}
{{- $ctx := index . 0 -}}
{{- $d := index . 1 -}}
{{- $c := index $d.spec.template.spec.containers 0 -}}
{{- $_ := set $c "image" (include "fleetsched.image" $ctx) -}}
{{- $_ := set $c "imagePullPolicy" $ctx.Values.image.pullPolicy -}}
{{- $args := index . 2 | default $c.args -}}
{{- $gates := list -}}
{{- if has $c.name (list "scheduler" "controller" "webhook" "estimator") -}}
{{- range $gate, $on := $ctx.Values.featureGates -}}{{- $gates = append $gates (printf "%s=%t" $gate $on) -}}{{- end -}}
{{- end -}}
{{- if $gates -}}{{- $args = append $args (printf "--feature-gates=%s" (join "," $gates)) -}}{{- end -}}
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
