{{/*
Names, labels and the RBAC rules shared by the templates. The rules are defined once here and
rendered into a Role (namespaced mode) or a ClusterRole (cluster mode); the chart's README
lists the same permissions and a test compares it with what the API server grants.
*/}}

{{- define "tiny-harness.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tiny-harness.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Cluster-scoped objects carry the release namespace, so two releases never collide. */}}
{{- define "tiny-harness.clusterName" -}}
{{- printf "%s-%s" (include "tiny-harness.fullname" .) .Release.Namespace | trunc 55 | trimSuffix "-" }}
{{- end }}

{{- define "tiny-harness.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tiny-harness.labels" -}}
helm.sh/chart: {{ include "tiny-harness.chart" . }}
{{ include "tiny-harness.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tiny-harness
{{- end }}

{{- define "tiny-harness.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tiny-harness.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tiny-harness.operatorSelectorLabels" -}}
{{ include "tiny-harness.selectorLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "tiny-harness.gatewaySelectorLabels" -}}
{{ include "tiny-harness.selectorLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "tiny-harness.operatorServiceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (printf "%s-operator" (include "tiny-harness.fullname" .)) .Values.operator.serviceAccount.name }}
{{- else }}
{{- required "operator.serviceAccount.name is required when operator.serviceAccount.create is false" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tiny-harness.gatewayServiceAccountName" -}}
{{- if .Values.gateway.serviceAccount.create }}
{{- default (printf "%s-gateway" (include "tiny-harness.fullname" .)) .Values.gateway.serviceAccount.name }}
{{- else }}
{{- required "gateway.serviceAccount.name is required when gateway.serviceAccount.create is false" .Values.gateway.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tiny-harness.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "tiny-harness.configMapName" -}}
{{- printf "%s-settings" (include "tiny-harness.fullname" .) }}
{{- end }}

{{- define "tiny-harness.operatorMetricsServiceName" -}}
{{- printf "%s-operator-metrics" (include "tiny-harness.fullname" .) }}
{{- end }}

{{- define "tiny-harness.gatewayServiceName" -}}
{{- printf "%s-gateway" (include "tiny-harness.fullname" .) }}
{{- end }}

{{/* The namespace the gateway serves; in namespaced mode it must be watchNamespace. */}}
{{- define "tiny-harness.gatewayNamespace" -}}
{{- $ns := .Values.gateway.namespace | default .Values.watchNamespace | default .Release.Namespace }}
{{- if and .Values.watchNamespace (ne $ns .Values.watchNamespace) }}
{{- fail (printf "gateway.namespace: %q is not watchNamespace %q; in namespaced mode the gateway's Role is in watchNamespace only, so leave gateway.namespace empty or set it to %q" $ns .Values.watchNamespace .Values.watchNamespace) }}
{{- end }}
{{- $ns }}
{{- end }}

{{- define "tiny-harness.gatewayBaseUrl" -}}
{{- .Values.gateway.baseUrl | default (printf "http://%s.%s.svc:%v" (include "tiny-harness.gatewayServiceName" .) .Release.Namespace (int .Values.gateway.service.port)) }}
{{- end }}

{{- define "tiny-harness.apiKeyEnv" -}}
{{- .Values.model.apiKeyEnv | default (ternary "ANTHROPIC_API_KEY" "OPENAI_API_KEY" (eq .Values.model.provider "anthropic")) }}
{{- end }}

{{/* Restricted Pod Security for every pod and container of the chart; not configurable. */}}
{{- define "tiny-harness.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "tiny-harness.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
The operator's rules on namespaced resources: tasks (it creates child tasks and patches its
own bookkeeping), their status (which it alone writes), messages (it reads them, and creates a
delegated task's brief and a parent's cancel to its children), turn journals
(which it alone writes), and Events in both API groups.
*/}}
{{- define "tiny-harness.operatorRules" -}}
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnesstasks"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnesstasks/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessmessages"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessturns"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnesstoolservers"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnesstoolservers/status"]
  verbs: ["get", "patch"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessagents"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessagents/status"]
  verbs: ["get", "patch"]
{{- with .Values.headerSecrets }}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: {{ toJson . }}
  verbs: ["get"]
{{- end }}
{{- end }}

{{/* What kopf needs on top when it watches the whole cluster. */}}
{{- define "tiny-harness.operatorClusterRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}

{{/*
The gateway's rules: it creates tasks and messages and reads turn journals. It never gets
harnesstasks/status, so nothing it is tricked into sending can set a task's state.
*/}}
{{- define "tiny-harness.gatewayRules" -}}
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnesstasks"]
  verbs: ["get", "list", "watch", "create"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessmessages"]
  verbs: ["get", "list", "watch", "create"]
- apiGroups: ["tiny-harness.madarauchiha-314.github.io"]
  resources: ["harnessturns"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/*
Tracing: the collector's credentials (OTLP headers) from an existing Secret, for both processes.
The endpoint itself is in the settings file ([tracing]).
*/}}
{{- define "tiny-harness.tracingEnv" -}}
{{- with .Values.tracing }}
{{- if and .otlpEndpoint .headersSecret }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ .headersSecret | quote }}
      key: {{ .headersSecretKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The collector's port, for the NetworkPolicies: the one in tracing.otlpEndpoint, else the
scheme's.
*/}}
{{- define "tiny-harness.tracingPort" -}}
{{- $url := urlParse .Values.tracing.otlpEndpoint -}}
{{- $hostPort := splitList ":" $url.host -}}
{{- if gt (len $hostPort) 1 -}}{{ last $hostPort }}{{- else if eq $url.scheme "https" -}}443{{- else -}}80{{- end -}}
{{- end }}

{{- /*
"true" when anyone in the cluster can claim any participant's identity at the gateway: header
mode (X-Participant-Id is trusted as sent) without a NetworkPolicy that admits only named
peers (the authenticating proxy) to the gateway. NOTES.txt says so plainly.
*/}}
{{- define "tiny-harness.forgeable" -}}
{{- $np := .Values.networkPolicy }}
{{- if and .Values.gateway.enabled (eq .Values.gateway.participantIdentity "header") (not (and $np.enabled $np.gatewayFrom)) -}}
true
{{- end }}
{{- end }}
