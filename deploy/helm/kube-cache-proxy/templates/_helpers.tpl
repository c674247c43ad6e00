{{/*
Shared pieces of the three modes. Every object's name is the prefix (kcp.prefix) and the name the
kustomize manifests give it, so `kubectl kustomize` with `namePrefix: RELEASE-` and this chart
render the same objects (test/e2e/helm.test.ts).
*/}}

{{/* The name prefix: .Values.namePrefix, or the release name and "-". */}}
{{- define "kcp.prefix" -}}
{{- if kindIs "invalid" .Values.namePrefix -}}
{{- printf "%s-" .Release.Name -}}
{{- else -}}
{{- .Values.namePrefix -}}
{{- end -}}
{{- end -}}

{{/* The proxy's image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "kcp.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* metadata.labels: what Helm adds (the tests ignore these four) and part-of, as kustomize's `labels:`. Call with (list $ "PART-OF"). */}}
{{- define "kcp.labels" -}}
{{- $ := index . 0 -}}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ $.Release.Service | quote }}
app.kubernetes.io/instance: {{ $.Release.Name | quote }}
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: {{ index . 1 }}
{{- end -}}

{{/*
RBAC rules for a --resources list (test/support/rbac-rules.ts cacheRbacRules): list and watch,
one rule per API group, the core group first then groups alphabetically, resources sorted; a
scope ([fieldSelector=…]) is dropped, since RBAC cannot express it.
*/}}
{{- define "kcp.rules" -}}
{{- $groups := dict -}}
{{- range . -}}
{{- $name := regexReplaceAll "\\[.*\\]$" . "" -}}
{{- $parts := splitn "." 2 $name -}}
{{- $group := $parts._1 | default "" -}}
{{- $_ := set $groups $group (append (get $groups $group | default list) $parts._0) -}}
{{- end -}}
rules:
{{- range $group := keys $groups | sortAlpha }}
  - apiGroups: [{{ $group | quote }}]
    resources: {{ get $groups $group | uniq | sortAlpha | toJson }}
    verbs: ["list", "watch"]
{{- end }}
{{- end -}}

{{/* --resources=… from a list. */}}
{{- define "kcp.resourcesArg" -}}
{{- printf "--resources=%s" (join "," .) -}}
{{- end -}}

{{/* The pod's security context: non-root UID 65532 (the image's), RuntimeDefault seccomp. */}}
{{- define "kcp.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/* A container's security context: no privilege escalation, read-only root, no capabilities. */}}
{{- define "kcp.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

{{/*
The proxy's probes on the ops port: startup /readyz (synced, and the apiserver reachable with the
proxy's credentials), readiness /readyz?exclude=upstream (an apiserver outage, shared by every
replica, does not take the pods out of their Services while the cache answers), liveness /livez.
*/}}
{{- define "kcp.probes" -}}
startupProbe:
  httpGet:
    path: /readyz
    port: ops
  periodSeconds: 2
  failureThreshold: 150
livenessProbe:
  httpGet:
    path: /livez
    port: ops
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz?exclude=upstream
    port: ops
  periodSeconds: 5
  failureThreshold: 2
{{- end -}}

{{/* A ServiceAccount subject in the release's namespace. */}}
{{- define "kcp.subject" -}}
subjects:
  - kind: ServiceAccount
    name: {{ index . 0 }}
    namespace: {{ index . 1 }}
{{- end -}}
