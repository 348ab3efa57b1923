{{/* Names. */}}
{{- define "conveyor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "conveyor.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "conveyor.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "conveyor.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The six backend services, in start order. */}}
{{- define "conveyor.backends" -}}identity pipelines builds artifacts agents notifications{{- end -}}

{{/* Connect/gRPC port of a process (README: 7101-7106, the gateway 8080); its health port is + 100. */}}
{{- define "conveyor.port" -}}
{{- $ports := dict "gateway" 8080 "identity" 7101 "pipelines" 7102 "builds" 7103 "artifacts" 7104 "agents" 7105 "notifications" 7106 -}}
{{- get $ports . -}}
{{- end -}}

{{- define "conveyor.healthPort" -}}
{{- add (include "conveyor.port" .) 100 -}}
{{- end -}}

{{/* Labels: (dict "root" $ "component" "builds"). */}}
{{- define "conveyor.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: conveyor
{{ include "conveyor.selectorLabels" . }}
{{- end -}}

{{- define "conveyor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "conveyor.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The in-cluster name of a component's objects. */}}
{{- define "conveyor.componentName" -}}
{{- printf "%s-%s" (include "conveyor.fullname" .root) .component -}}
{{- end -}}

{{/* One image of deploy/Dockerfile: (dict "root" $ "name" "gateway"). */}}
{{- define "conveyor.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.repository .name (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/* A service's settings: defaults merged with services.<name>. */}}
{{- define "conveyor.serviceValues" -}}
{{- $svc := get .root.Values.services .component | default dict -}}
{{- toYaml (mustMergeOverwrite (deepCopy .root.Values.defaults) (deepCopy $svc)) -}}
{{- end -}}

{{- define "conveyor.serviceUrl" -}}
{{- printf "http://%s:%s" (include "conveyor.componentName" (dict "root" .root "component" .component)) (include "conveyor.port" .component) -}}
{{- end -}}

{{/* The gateway Service's in-cluster base URL. */}}
{{- define "conveyor.gatewayUrl" -}}
{{- $port := .Values.services.gateway.service.port | default 80 | int -}}
{{- printf "http://%s.%s.svc%s" (include "conveyor.componentName" (dict "root" . "component" "gateway")) .Release.Namespace (ternary "" (printf ":%d" $port) (eq $port 80)) -}}
{{- end -}}

{{- define "conveyor.publicUrl" -}}
{{- if .Values.publicUrl -}}
{{- .Values.publicUrl | trimSuffix "/" -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
{{- printf "%s://%s" (ternary "https" "http" (ne .Values.ingress.tlsSecretName "")) .Values.ingress.host -}}
{{- else -}}
{{- include "conveyor.gatewayUrl" . -}}
{{- end -}}
{{- end -}}

{{/* Where the stores are: the in-chart evaluation ones when enabled, else the external ones. */}}
{{- define "conveyor.natsUrl" -}}
{{- if .Values.evaluation.nats.enabled -}}
{{- printf "nats://%s:4222" (include "conveyor.componentName" (dict "root" . "component" "nats")) -}}
{{- else -}}
{{- .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{- define "conveyor.s3Endpoint" -}}
{{- if .Values.evaluation.s3.enabled -}}
{{- printf "http://%s:7070" (include "conveyor.componentName" (dict "root" . "component" "s3")) -}}
{{- else -}}
{{- .Values.s3.endpoint | trimSuffix "/" -}}
{{- end -}}
{{- end -}}

{{/* The Secret (name and key) holding MONGODB_URL. */}}
{{- define "conveyor.mongodbSecret" -}}
{{- if or .Values.evaluation.ferretdb.enabled .Values.mongodb.url -}}
{{- include "conveyor.storesSecretName" . }} mongodb-url
{{- else -}}
{{- .Values.mongodb.existingSecret }} {{ .Values.mongodb.existingSecretKey }}
{{- end -}}
{{- end -}}

{{/* The Secret (name, access key's key, secret key's key) holding the S3 credentials. */}}
{{- define "conveyor.s3Secret" -}}
{{- if or .Values.evaluation.s3.enabled .Values.s3.accessKey -}}
{{- include "conveyor.storesSecretName" . }} s3-access-key s3-secret-key
{{- else -}}
{{- .Values.s3.existingSecret }} {{ .Values.s3.accessKeyKey }} {{ .Values.s3.secretKeyKey }}
{{- end -}}
{{- end -}}

{{- define "conveyor.storesSecretName" -}}
{{- printf "%s-stores" (include "conveyor.fullname" .) -}}
{{- end -}}

{{/* The Secret holding the notifications service's CREDENTIALS_ENCRYPTION_KEY (templates/credentials-key.yaml). */}}
{{- define "conveyor.credentialsKeySecretName" -}}
{{- .Values.credentialsKey.existingSecret | default (printf "%s-credentials-key" (include "conveyor.fullname" .)) -}}
{{- end -}}

{{- define "conveyor.credentialsSecretName" -}}
{{- printf "%s-credentials" (include "conveyor.fullname" .) -}}
{{- end -}}

{{/* Whether the chart's own stores Secret has anything to hold. */}}
{{- define "conveyor.storesSecretNeeded" -}}
{{- if or .Values.evaluation.ferretdb.enabled .Values.mongodb.url .Values.evaluation.s3.enabled .Values.s3.accessKey -}}true{{- end -}}
{{- end -}}

{{/* Pod-level and container-level security contexts. */}}
{{- define "conveyor.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end -}}

{{- define "conveyor.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end -}}

{{/* Rules values.schema.json cannot say clearly; each fails with the value to change. */}}
{{- define "conveyor.validate" -}}
{{- if and (not .Values.evaluation.ferretdb.enabled) (not .Values.mongodb.url) (not .Values.mongodb.existingSecret) -}}
{{- fail "mongodb: set mongodb.url, or mongodb.existingSecret (a Secret holding the connection string), or evaluation.ferretdb.enabled=true" -}}
{{- end -}}
{{- if and (not .Values.evaluation.s3.enabled) (ne (empty .Values.s3.accessKey) (empty .Values.s3.secretKey)) -}}
{{- fail "s3: set both s3.accessKey and s3.secretKey, or neither (then s3.existingSecret holds them)" -}}
{{- end -}}
{{- if and (not .Values.evaluation.s3.enabled) (not .Values.s3.accessKey) (not .Values.s3.existingSecret) -}}
{{- fail "s3: set s3.accessKey and s3.secretKey, or s3.existingSecret, or evaluation.s3.enabled=true" -}}
{{- end -}}
{{- if and (not .Values.evaluation.nats.enabled) (not .Values.nats.url) -}}
{{- fail "nats: set nats.url (NATS with JetStream), or evaluation.nats.enabled=true" -}}
{{- end -}}
{{- range $name := list "gateway" "identity" "pipelines" "builds" "artifacts" "agents" "notifications" -}}
{{- $v := include "conveyor.serviceValues" (dict "root" $ "component" $name) | fromYaml -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail (printf "services.%s.autoscaling: minReplicas (%v) is above maxReplicas (%v)" $name $v.autoscaling.minReplicas $v.autoscaling.maxReplicas) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.agent.enabled (not .Values.bootstrap.enabled) (not .Values.agent.tokenSecret.name) -}}
{{- fail "agent: with bootstrap.enabled=false, name the Secret holding the registration token in agent.tokenSecret.name" -}}
{{- end -}}
{{- end -}}
