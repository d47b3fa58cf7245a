{{/* _helpers.tpl — names, labels and the image shared by every template. */}}

{{- define "kmesh.name" -}}kmesh{{- end -}}

{{- define "kmesh.labels" -}}
app.kubernetes.io/name: kmesh
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kmesh.selector" -}}
app.kubernetes.io/name: kmesh
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kmesh.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* "on" or "off" for a boolean value */}}
{{- define "kmesh.onoff" -}}{{ if . }}on{{ else }}off{{ end }}{{- end -}}

{{/* The security context every container starts from: nothing gained, nothing written. */}}
{{- define "kmesh.baseSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The env and volumeMounts values, added to every container (after the chart's own). */}}
{{- define "kmesh.extraEnv" -}}
{{- range $k, $v := .Values.env }}
- {name: {{ $k | quote }}, value: {{ $v | toString | quote }}}
{{- end }}
{{- end -}}
{{- define "kmesh.extraMounts" -}}
{{- with .Values.volumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}
