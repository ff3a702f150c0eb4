{{/* The chart's name, and the resources' base name: <release>-runledger, at most 63 characters. */}}
{{- define "runledger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "runledger.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "runledger.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every resource carries. */}}
{{- define "runledger.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ include "runledger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The server's pods: what the Service, the PDB and the NetworkPolicy select. */}}
{{- define "runledger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "runledger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{/* The fewest server instances: replicaCount, or the HPA's minReplicas. */}}
{{- define "runledger.minReplicas" -}}
{{- if .Values.autoscaling.enabled -}}
{{- int .Values.autoscaling.minReplicas -}}
{{- else -}}
{{- int .Values.replicaCount -}}
{{- end -}}
{{- end -}}

{{- define "runledger.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret holding API_TOKEN, AUTH_*, DATABASE_URL and REDIS_URL: the chart's or yours. */}}
{{- define "runledger.secretName" -}}
{{- default (include "runledger.fullname" .) .Values.secret.existingSecret -}}
{{- end -}}

{{/* The other resources' names: the base name, shortened to leave room for the suffix (63 characters in all). */}}
{{- define "runledger.postgresql.host" -}}
{{- printf "%s-postgresql" (include "runledger.fullname" . | trunc 52 | trimSuffix "-") -}}
{{- end -}}

{{- define "runledger.redis.host" -}}
{{- printf "%s-redis" (include "runledger.fullname" . | trunc 57 | trimSuffix "-") -}}
{{- end -}}

{{- define "runledger.migrate.name" -}}
{{- printf "%s-migrate" (include "runledger.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/* DATABASE_URL: the bundled PostgreSQL's, or secret.databaseUrl. */}}
{{- define "runledger.databaseUrl" -}}
{{- if .Values.postgresql.enabled -}}
{{- $password := required "postgresql.password is required with the bundled PostgreSQL (letters and digits: openssl rand -hex 24)" .Values.postgresql.password -}}
{{- printf "postgres://%s:%s@%s:5432/%s" .Values.postgresql.username $password (include "runledger.postgresql.host" .) .Values.postgresql.database -}}
{{- else -}}
{{- required "secret.databaseUrl is required without the bundled PostgreSQL (postgresql.enabled false): postgres://user:password@host:5432/runledger" .Values.secret.databaseUrl -}}
{{- end -}}
{{- end -}}

{{/* REDIS_URL: the bundled Redis's, secret.redisUrl, or empty (events stay in each process). */}}
{{- define "runledger.redisUrl" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s:6379" (include "runledger.redis.host" .) -}}
{{- else -}}
{{- .Values.secret.redisUrl -}}
{{- end -}}
{{- end -}}

{{/* Refusals: settings the chart would otherwise deploy wrong. */}}
{{- define "runledger.validate" -}}
{{- if not (or .Values.secret.existingSecret .Values.secret.apiToken .Values.secret.auth) -}}
{{- fail "set secret.apiToken, secret.auth (AUTH_* settings) or secret.existingSecret: without authentication every caller of the API is an admin" -}}
{{- end -}}
{{- range $name, $value := .Values.secret.auth -}}
{{- if not (hasPrefix "AUTH_" $name) -}}
{{- fail (printf "secret.auth holds AUTH_* settings only, not %s" $name) -}}
{{- end -}}
{{- end -}}
{{- range $name := list "HOST" "PORT" "METRICS_PORT" "DATABASE_URL" "REDIS_URL" "API_TOKEN" -}}
{{- if hasKey $.Values.env $name -}}
{{- fail (printf "env.%s is set by the chart: remove it from env" $name) -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.secret.existingSecret) (not .Values.redis.enabled) (not .Values.secret.redisUrl) (or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1)) -}}
{{- fail "several instances need Redis for live events: keep redis.enabled, or set secret.redisUrl" -}}
{{- end -}}
{{- end -}}
