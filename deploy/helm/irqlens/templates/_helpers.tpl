{{/* The labels every object has. */}}
{{- define "irqlens.labels" -}}
{{ include "irqlens.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The labels the DaemonSet and the Service select the agent's pods by. */}}
{{- define "irqlens.selectorLabels" -}}
app.kubernetes.io/name: irqlens
app.kubernetes.io/component: agent
{{- end }}

{{/* The objects' name. */}}
{{- define "irqlens.name" -}}
{{- printf "%s-agent" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* The endpoint's port: the one the config's listen address names. */}}
{{- define "irqlens.port" -}}
{{- $port := .Values.config.listen | splitList ":" | last -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "config.listen %q: expected IP:PORT or [IPv6]:PORT" .Values.config.listen) -}}
{{- end -}}
{{- $port -}}
{{- end }}

{{/* The agent's config file. */}}
{{- define "irqlens.config" -}}
{{ toToml .Values.config }}
{{- end }}
