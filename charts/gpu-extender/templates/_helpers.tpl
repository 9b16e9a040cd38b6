{{/*
Names. The extender's objects take the release's full name ("gpu-extender" for `helm install gpu-extender`),
the second scheduler's take its profile name (scheduler.name, "gpu-scheduler"), so that one release
installed as the README says renders the same objects as manifests/ (which is rendered from this chart).
*/}}
{{- define "gpu-extender.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.schedulerName" -}}
{{- .Values.scheduler.name -}}
{{- end -}}

{{/* Labels on every object; selectors use only app.kubernetes.io/name (immutable across upgrades). */}}
{{- define "gpu-extender.labels" -}}
app.kubernetes.io/part-of: gpu-extender
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The extender's port for the verbs: 8443 with TLS, 8888 without. */}}
{{- define "gpu-extender.port" -}}
{{- if .Values.tls.enabled -}}8443{{- else -}}8888{{- end -}}
{{- end -}}
{{- define "gpu-extender.portName" -}}
{{- if .Values.tls.enabled -}}https{{- else -}}http{{- end -}}
{{- end -}}

{{/* The Service's DNS name, which the scheduler calls and the serving certificate names. */}}
{{- define "gpu-extender.serviceHost" -}}
{{- printf "%s.%s.svc" (include "gpu-extender.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/*
The cluster's Kubernetes version as "1.37.2": .Capabilities.KubeVersion (the API server's, at install
time; `helm template` takes --kube-version), or kubeVersionOverride. Refused outside the supported range
with a message that says what to do.
*/}}
{{- define "gpu-extender.kubeVersion" -}}
{{- $raw := default .Capabilities.KubeVersion.Version .Values.kubeVersionOverride -}}
{{- $v := regexFind "[0-9]+\\.[0-9]+\\.[0-9]+" $raw -}}
{{- if not $v -}}
{{- fail (printf "kubeVersionOverride: %q is not a Kubernetes version such as 1.37.2" $raw) -}}
{{- end -}}
{{- if not (semverCompare ">=1.34.0 <1.38.0" $v) -}}
{{- fail (printf "Kubernetes %s is outside the releases this chart supports (1.34 to 1.37, tested on real control planes); set kubeVersionOverride only if you know the scheduler configuration and RBAC hold there" $v) -}}
{{- end -}}
{{- $v -}}
{{- end -}}

{{/*
The second scheduler's image: the stock kube-scheduler of the cluster's own release (skew policy: never
newer than the API server), unless scheduler.image.tag names one.
*/}}
{{- define "gpu-extender.schedulerImage" -}}
{{- $version := include "gpu-extender.kubeVersion" . -}}
{{- $tag := .Values.scheduler.image.tag | default (printf "v%s" $version) -}}
{{- printf "%s:%s" .Values.scheduler.image.repository $tag -}}
{{- end -}}

{{/* The webhook needs the certificates TLS brings: refused with a message otherwise. */}}
{{- define "gpu-extender.checkWebhook" -}}
{{- if and .Values.webhook.enabled (not .Values.tls.enabled) -}}
{{- fail "webhook.enabled needs tls.enabled: the API server calls admission webhooks over HTTPS, with the chart's CA (or set webhook.enabled=false)" -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The policy ConfigMap's name: the user's own, or this release's when policy.content is given. */}}
{{- define "gpu-extender.policyConfigMap" -}}
{{- if .Values.policy.existingConfigMap -}}
{{- .Values.policy.existingConfigMap -}}
{{- else if .Values.policy.content -}}
{{- printf "%s-policy" (include "gpu-extender.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* What the extender needs to patch pods: GPU sharing (annotations) or deletion costs. */}}
{{- define "gpu-extender.patchesPods" -}}
{{- if or .Values.gpuShare.enabled .Values.deletionCosts.enabled -}}true{{- end -}}
{{- end -}}

{{/* The scheduler's managedResources: the values', plus gpushare's memory resource; none for DRA claim pods. */}}
{{- define "gpu-extender.managedResources" -}}
{{- if not .Values.dra.claimPods -}}
{{- $resources := .Values.scheduler.managedResources -}}
{{- if and .Values.gpuShare.enabled (not (has "aliyun.com/gpu-mem" $resources)) -}}
{{- $resources = append $resources "aliyun.com/gpu-mem" -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}
{{- end -}}

{{/*
The extender as a KubeSchedulerConfiguration `extenders` entry: the second scheduler's, and what NOTES.txt
prints for a scheduler the user runs (scheduler.enabled=false). Names mode (nodeCacheCapable) sends node
names only, which the extender answers from its own watch; full mode sends whole Node objects and leaves
out preempt (the extender cannot judge victims on nodes it did not watch).
*/}}
{{- define "gpu-extender.extenderStanza" -}}
{{- $names := eq .Values.extender.mode "names" -}}
{{- if .Values.tls.enabled }}
- urlPrefix: https://{{ include "gpu-extender.serviceHost" . }}:8443
  enableHTTPS: true
  tlsConfig:
    insecure: false
    serverName: {{ include "gpu-extender.serviceHost" . }}
    caFile: /etc/gpu-scheduler-tls/ca.crt     # the CA of the extender's serving certificate
    certFile: /etc/gpu-scheduler-tls/tls.crt  # the scheduler's client certificate
    keyFile: /etc/gpu-scheduler-tls/tls.key
{{- else }}
- urlPrefix: http://{{ include "gpu-extender.serviceHost" . }}:8888
{{- end }}
  filterVerb: filter
  prioritizeVerb: prioritize
  {{- if $names }}
  preemptVerb: preempt
  {{- end }}
  {{- if .Values.extender.bind }}
  bindVerb: bind
  {{- end }}
  # The extender's 0..10 score x weight x 10 is added to the plugins' 0..100 scores: 5 makes a perfect
  # GPU fit worth 500, enough to outweigh the default spreading plugins.
  weight: {{ .Values.scheduler.extenderWeight }}
  # The whole request, per verb. Every millisecond here is added to every GPU pod's scheduling.
  httpTimeout: {{ .Values.scheduler.extenderTimeout }}
  nodeCacheCapable: {{ $names }}
  # false: if the extender cannot be reached, GPU pods wait rather than land on the wrong GPU.
  ignorable: {{ .Values.scheduler.ignorable }}
  {{- with include "gpu-extender.managedResources" . }}
  # Only pods requesting one of these reach the extender; the scheduler keeps counting them itself
  # (ignoredByScheduler: false), so its cache stays the authority on free counts.
  managedResources:
    {{- range (fromYamlArray .) }}
    - name: {{ . }}
      ignoredByScheduler: false
    {{- end }}
  {{- end }}
{{- end -}}

{{/*
The MutatingWebhookConfiguration of the admission webhook (values `webhook`): GPU annotations written
into pods as node affinity, for autoscalers. Called with (dict "ctx" . "caBundle" B64 "annotations" MAP)
from the template that knows the CA: the chart's own (tls-secrets.yaml) or cert-manager's (injected).
*/}}
{{- define "gpu-extender.webhookConfiguration" -}}
{{- $ := .ctx -}}
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{ include "gpu-extender.fullname" $ }}
  labels:
    {{- include "gpu-extender.labels" $ | nindent 4 }}
    app.kubernetes.io/name: gpu-extender
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
webhooks:
  - name: node-affinity.gpu-extender.nvidia.com
    admissionReviewVersions: ["v1"]
    sideEffects: None
    # Ignore: a pod created while the extender is down is created as before (the extender still refuses
    # wrong nodes at /filter); Fail would stop every pod creation in opted-in namespaces instead.
    failurePolicy: {{ $.Values.webhook.failurePolicy }}
    timeoutSeconds: {{ $.Values.webhook.timeoutSeconds }}
    reinvocationPolicy: Never
    clientConfig:
      service:
        name: {{ include "gpu-extender.fullname" $ }}
        namespace: {{ $.Release.Namespace }}
        path: /mutate-pods
        port: {{ $.Values.webhook.port }}
      {{- with .caBundle }}
      caBundle: {{ . }}
      {{- end }}
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
        scope: Namespaced
    namespaceSelector:
      {{- toYaml $.Values.webhook.namespaceSelector | nindent 6 }}
    # Only the pods the extender schedules are sent (the API server evaluates this, 1.30+).
    matchConditions:
      - name: gpu-scheduler-pods
        expression: {{ printf "has(object.spec.schedulerName) && object.spec.schedulerName in %s" (include "gpu-extender.schedulerNamesCel" $) | quote }}
{{- end -}}

{{/* The extender's scheduler names as a CEL list: ['gpu-scheduler', 'my-scheduler']. */}}
{{- define "gpu-extender.schedulerNamesCel" -}}
{{- $names := list -}}
{{- range (prepend .Values.extender.extraSchedulerNames (include "gpu-extender.schedulerName" .)) -}}
{{- $names = append $names (printf "'%s'" .) -}}
{{- end -}}
[{{ join ", " $names }}]
{{- end -}}
