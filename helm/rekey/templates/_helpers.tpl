{{/* vim: set filetype=mustache: */}}

{{/*
The services the chart deploys, in a fixed order. The services map in values.yaml
carries exactly these keys (the schema rejects any other name).
*/}}
{{- define "rekey.serviceNames" -}}
acl,projection,sink,reconciler
{{- end -}}

{{/*
The Deployments to render, as JSON {"items": [{"name", "service", "args", "values"}]}: one per service, except
that services.acl.stages.split gives the acl service two, acl-translate and acl-sequence (`rekey run acl --stage
...`), each with the acl values under its own stage's values. The sequence stage reads `<consumerGroup>-sequencing`.
Usage: {{ range $workload := (include "rekey.workloads" $ | fromJson).items }}
*/}}
{{- define "rekey.workloads" -}}
{{- $root := . -}}
{{- $items := list -}}
{{- range $name := splitList "," (include "rekey.serviceNames" $root) -}}
{{- $svc := index $root.Values.services $name -}}
{{- if and (eq $name "acl") $svc.stages.split -}}
{{- $base := omit $svc "stages" -}}
{{- $sequenceDefaults := dict "inputTopic" (printf "%s-sequencing" $svc.consumerGroup) -}}
{{- range $stage := list "translate" "sequence" -}}
{{- $values := mergeOverwrite (deepCopy $base) (ternary $sequenceDefaults (dict) (eq $stage "sequence")) (deepCopy (index $svc.stages $stage)) -}}
{{- $items = append $items (dict "name" (printf "acl-%s" $stage) "service" "acl" "args" (list "run" "acl" "--stage" $stage) "values" $values) -}}
{{- end -}}
{{- else -}}
{{- $items = append $items (dict "name" $name "service" $name "args" (list "run" $name) "values" $svc) -}}
{{- end -}}
{{- end -}}
{{- dict "items" $items | toJson -}}
{{- end -}}

{{/*
Services whose workers keep local state (RocksDB stores, the worker id) under /var/lib/rekey: the ones
services.<name>.persistence can put on a PersistentVolumeClaim.
*/}}
{{- define "rekey.statefulServiceNames" -}}
acl,projection
{{- end -}}

{{/*
Services that read the sink database and need REKEY_SINK_DATABASE_URL and REKEY_SINK_TOPIC.
*/}}
{{- define "rekey.sinkServiceNames" -}}
sink,reconciler
{{- end -}}

{{/*
Chart name, overridable with nameOverride.
*/}}
{{- define "rekey.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Fully qualified app name, truncated to 63 characters (DNS label limit).
If the release name already contains the chart name it is used as is.
*/}}
{{- define "rekey.fullname" -}}
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
Name of a per-component resource: <fullname>-<component>.
Usage: {{ include "rekey.componentName" (dict "root" $ "component" "acl") }}
*/}}
{{- define "rekey.componentName" -}}
{{- printf "%s-%s" (include "rekey.fullname" .root | trunc (int (sub 62 (len .component)))) .component | trimSuffix "-" -}}
{{- end -}}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "rekey.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels every resource carries. Takes the root context.
*/}}
{{- define "rekey.labels" -}}
helm.sh/chart: {{ include "rekey.chart" . }}
app.kubernetes.io/name: {{ include "rekey.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rekey
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Labels of a component's resources.
Usage: {{ include "rekey.componentLabels" (dict "root" $ "component" "acl") }}
*/}}
{{- define "rekey.componentLabels" -}}
{{ include "rekey.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
Immutable selector labels of a component.
Usage: {{ include "rekey.selectorLabels" (dict "root" $ "component" "acl") }}
*/}}
{{- define "rekey.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rekey.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
commonAnnotations as a YAML map body (empty when none). Takes the root context.
*/}}
{{- define "rekey.annotations" -}}
{{- with .Values.commonAnnotations }}
{{- toYaml . }}
{{- end }}
{{- end -}}

{{/*
Full image reference. registry/repository:tag, or registry/repository@digest when a digest is set.
global.imageRegistry overrides the registry; the tag defaults to the chart appVersion.
Usage: {{ include "rekey.image" (dict "image" .Values.image "root" $) }}
*/}}
{{- define "rekey.image" -}}
{{- $registry := .image.registry -}}
{{- with .root.Values.global }}{{- if .imageRegistry }}{{- $registry = .imageRegistry -}}{{- end }}{{- end -}}
{{- $repository := .image.repository -}}
{{- if $registry -}}
{{- $repository = printf "%s/%s" $registry .image.repository -}}
{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (.image.tag | default .root.Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/*
imagePullSecrets of every pod: global.imagePullSecrets plus image.pullSecrets. Takes the root context.
*/}}
{{- define "rekey.imagePullSecrets" -}}
{{- $secrets := list -}}
{{- range (concat (.Values.global.imagePullSecrets | default list) (.Values.image.pullSecrets | default list)) -}}
{{- if not (has . $secrets) -}}{{- $secrets = append $secrets . -}}{{- end -}}
{{- end -}}
{{- if $secrets }}
imagePullSecrets:
{{- range $secrets }}
  - name: {{ . | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
ServiceAccount of the services and the topic job. Takes the root context.
*/}}
{{- define "rekey.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rekey.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
ServiceAccount of the backfill driver. Takes the root context.
*/}}
{{- define "rekey.backfill.serviceAccountName" -}}
{{- if .Values.backfill.serviceAccount.create -}}
{{- default (include "rekey.componentName" (dict "root" . "component" "backfill")) .Values.backfill.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.backfill.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
Name of the catalog ConfigMap. Takes the root context.
*/}}
{{- define "rekey.catalogConfigMapName" -}}
{{- include "rekey.componentName" (dict "root" . "component" "catalog") -}}
{{- end -}}

{{/*
Catalog content: the catalog value as text (a map is serialised to YAML). Takes the root context.
*/}}
{{- define "rekey.catalog" -}}
{{- if kindIs "string" .Values.catalog -}}
{{- .Values.catalog -}}
{{- else -}}
{{- toYaml .Values.catalog -}}
{{- end -}}
{{- end -}}

{{/*
Pod annotation that rolls the pods whenever the catalog changes. Takes the root context.
*/}}
{{- define "rekey.catalogChecksum" -}}
checksum/catalog: {{ include "rekey.catalog" . | sha256sum }}
{{- end -}}

{{/*
True ("true") when Kafka uses SASL. Takes the root context.
*/}}
{{- define "rekey.kafka.saslEnabled" -}}
{{- if hasPrefix "SASL_" .Values.kafka.securityProtocol -}}true{{- end -}}
{{- end -}}

{{/*
True ("true") when Kafka uses TLS. Takes the root context.
*/}}
{{- define "rekey.kafka.tlsEnabled" -}}
{{- if or (eq .Values.kafka.securityProtocol "SSL") (eq .Values.kafka.securityProtocol "SASL_SSL") -}}true{{- end -}}
{{- end -}}

{{/*
True ("true") when the brokers' CA is mounted from a Secret. Takes the root context.
*/}}
{{- define "rekey.kafka.caMounted" -}}
{{- if and (include "rekey.kafka.tlsEnabled" .) .Values.kafka.tls.caExistingSecret -}}true{{- end -}}
{{- end -}}

{{/*
True ("true") when a client certificate is mounted for mTLS. Takes the root context.
*/}}
{{- define "rekey.kafka.clientCertMounted" -}}
{{- if and (include "rekey.kafka.tlsEnabled" .) .Values.kafka.tls.clientCertExistingSecret -}}true{{- end -}}
{{- end -}}

{{/*
True ("true") when SASL uses OAUTHBEARER (OIDC client credentials). Takes the root context.
*/}}
{{- define "rekey.kafka.oauth" -}}
{{- if and (include "rekey.kafka.saslEnabled" .) (eq .Values.kafka.sasl.mechanism "OAUTHBEARER") -}}true{{- end -}}
{{- end -}}

{{/*
Path of the mounted Kafka CA certificate. Takes the root context.
*/}}
{{- define "rekey.kafka.caLocation" -}}
{{- printf "%s/ca.crt" (trimSuffix "/" .Values.kafka.tls.mountPath) -}}
{{- end -}}

{{/*
Plain (non-secret) environment shared by every rekey container.
Usage: {{ include "rekey.commonEnv" (dict "root" $ "logLevel" "DEBUG") }}
*/}}
{{- define "rekey.commonEnv" -}}
{{- $root := .root -}}
- name: REKEY_KAFKA_BOOTSTRAP_SERVERS
  value: {{ $root.Values.kafka.bootstrapServers | quote }}
- name: REKEY_KAFKA_SECURITY_PROTOCOL
  value: {{ $root.Values.kafka.securityProtocol | quote }}
{{- if include "rekey.kafka.saslEnabled" $root }}
- name: REKEY_KAFKA_SASL_MECHANISM
  value: {{ $root.Values.kafka.sasl.mechanism | quote }}
{{- end }}
{{- if include "rekey.kafka.caMounted" $root }}
- name: REKEY_KAFKA_SSL_CA_LOCATION
  value: {{ include "rekey.kafka.caLocation" $root | quote }}
{{- end }}
{{- if include "rekey.kafka.clientCertMounted" $root }}
- name: REKEY_KAFKA_SSL_CERTIFICATE_LOCATION
  value: {{ printf "%s/tls.crt" (trimSuffix "/" $root.Values.kafka.tls.clientCertMountPath) | quote }}
- name: REKEY_KAFKA_SSL_KEY_LOCATION
  value: {{ printf "%s/tls.key" (trimSuffix "/" $root.Values.kafka.tls.clientCertMountPath) | quote }}
{{- end }}
{{- if include "rekey.kafka.oauth" $root }}
- name: REKEY_KAFKA_OAUTH_TOKEN_ENDPOINT_URL
  value: {{ $root.Values.kafka.sasl.oauth.tokenEndpointUrl | quote }}
{{- with $root.Values.kafka.sasl.oauth.scope }}
- name: REKEY_KAFKA_OAUTH_SCOPE
  value: {{ . | quote }}
{{- end }}
{{- end }}
- name: REKEY_REGISTRY_URL
  value: {{ $root.Values.schemaRegistry.url | quote }}
- name: REKEY_CATALOG_PATH
  value: "/etc/rekey/catalog.yaml"
- name: REKEY_PROCESSING_GUARANTEE
  value: {{ $root.Values.processingGuarantee | quote }}
- name: REKEY_DATA_DIR
  value: "/var/lib/rekey"
- name: REKEY_LOG_LEVEL
  value: {{ .logLevel | default $root.Values.logLevel | quote }}
{{- end -}}

{{/*
Credentials, every one read from an existing Secret (never from values).
Usage: {{ include "rekey.secretEnv" (dict "root" $ "sink" true) }}
*/}}
{{- define "rekey.secretEnv" -}}
{{- $root := .root -}}
{{- if include "rekey.kafka.oauth" $root }}
- name: REKEY_KAFKA_OAUTH_CLIENT_ID
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.kafka.sasl.existingSecret | quote }}
      key: {{ $root.Values.kafka.sasl.oauth.clientIdKey | quote }}
- name: REKEY_KAFKA_OAUTH_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.kafka.sasl.existingSecret | quote }}
      key: {{ $root.Values.kafka.sasl.oauth.clientSecretKey | quote }}
{{- else if include "rekey.kafka.saslEnabled" $root }}
- name: REKEY_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.kafka.sasl.existingSecret | quote }}
      key: {{ $root.Values.kafka.sasl.usernameKey | quote }}
- name: REKEY_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.kafka.sasl.existingSecret | quote }}
      key: {{ $root.Values.kafka.sasl.passwordKey | quote }}
{{- end }}
{{- with $root.Values.schemaRegistry.auth }}
{{- if .existingSecret }}
- name: REKEY_REGISTRY_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .usernameKey | quote }}
- name: REKEY_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .passwordKey | quote }}
{{- end }}
{{- end }}
{{- if .sink }}
- name: REKEY_SINK_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.sinkDatabase.existingSecret | quote }}
      key: {{ $root.Values.sinkDatabase.dsnKey | quote }}
{{- end }}
{{- end -}}

{{/*
Volume mounts of every rekey container: /tmp, the data dir, the catalog and the Kafka CA.
Takes the root context.
*/}}
{{- define "rekey.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/rekey
- name: catalog
  mountPath: /etc/rekey
  readOnly: true
{{- if include "rekey.kafka.caMounted" . }}
- name: kafka-ca
  mountPath: {{ .Values.kafka.tls.mountPath | quote }}
  readOnly: true
{{- end }}
{{- if include "rekey.kafka.clientCertMounted" . }}
- name: kafka-client-cert
  mountPath: {{ .Values.kafka.tls.clientCertMountPath | quote }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
Volumes matching rekey.volumeMounts. With "persistent" the data volume is left out: a StatefulSet's volume
claim template named data provides it.
Usage: {{ include "rekey.volumes" (dict "root" $ "dataSizeLimit" "4Gi" "persistent" "") }}
*/}}
{{- define "rekey.volumes" -}}
{{- $root := .root -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ $root.Values.tmpDirSizeLimit | quote }}
{{- if not .persistent }}
- name: data
  emptyDir:
    {{- if .dataSizeLimit }}
    sizeLimit: {{ .dataSizeLimit | quote }}
    {{- else }}
    {}
    {{- end }}
{{- end }}
- name: catalog
  configMap:
    name: {{ include "rekey.catalogConfigMapName" $root }}
    items:
      - key: catalog.yaml
        path: catalog.yaml
{{- if include "rekey.kafka.caMounted" $root }}
- name: kafka-ca
  secret:
    secretName: {{ $root.Values.kafka.tls.caExistingSecret | quote }}
    items:
      - key: {{ $root.Values.kafka.tls.caKey | quote }}
        path: ca.crt
{{- end }}
{{- if include "rekey.kafka.clientCertMounted" $root }}
- name: kafka-client-cert
  secret:
    secretName: {{ $root.Values.kafka.tls.clientCertExistingSecret | quote }}
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
{{- end }}
{{- end -}}

{{/*
Probe body (without the handler's port/path) from a probe values block.
*/}}
{{- define "rekey.probeTimings" -}}
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
successThreshold: {{ .successThreshold }}
{{- end -}}

{{/*
Cross-field checks the JSON schema cannot express. Fails rendering with a message naming the values.
Takes the root context.
*/}}
{{- define "rekey.validateValues" -}}
{{- $root := . -}}
{{- if include "rekey.kafka.saslEnabled" $root -}}
{{- if not $root.Values.kafka.sasl.existingSecret -}}
{{- fail (printf "kafka.securityProtocol is %s: set kafka.sasl.existingSecret to an existing Secret holding the SASL credentials (keys %s and %s)" $root.Values.kafka.securityProtocol $root.Values.kafka.sasl.usernameKey $root.Values.kafka.sasl.passwordKey) -}}
{{- end -}}
{{- if not $root.Values.kafka.sasl.mechanism -}}
{{- fail (printf "kafka.securityProtocol is %s: set kafka.sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)" $root.Values.kafka.securityProtocol) -}}
{{- end -}}
{{- if and (eq $root.Values.kafka.sasl.mechanism "OAUTHBEARER") (not $root.Values.kafka.sasl.oauth.tokenEndpointUrl) -}}
{{- fail "kafka.sasl.mechanism is OAUTHBEARER: set kafka.sasl.oauth.tokenEndpointUrl (the OIDC token endpoint)" -}}
{{- end -}}
{{- end -}}
{{- range $name := splitList "," (include "rekey.sinkServiceNames" $root) -}}
{{- if and (index $root.Values.services $name).enabled (not $root.Values.sinkDatabase.existingSecret) -}}
{{- fail (printf "services.%s.enabled is true: set sinkDatabase.existingSecret to an existing Secret holding the sink DSN (key %s)" $name $root.Values.sinkDatabase.dsnKey) -}}
{{- end -}}
{{- end -}}
{{- range $workload := (include "rekey.workloads" $root | fromJson).items -}}
{{- $name := $workload.name -}}
{{- $svc := $workload.values -}}
{{- if $svc.enabled -}}
{{- if and (include "rekey.persistent" $svc) (not (has $workload.service (splitList "," (include "rekey.statefulServiceNames" $root)))) -}}
{{- fail (printf "services.%s.persistence.enabled is true: the %s keeps no local state between runs, only %s do; run it as a Deployment" $name $name (include "rekey.statefulServiceNames" $root | replace "," " and ")) -}}
{{- end -}}
{{- $partitions := int $svc.inputTopicPartitions -}}
{{- if and $svc.hpa.enabled $svc.keda.enabled -}}
{{- fail (printf "services.%s: hpa.enabled and keda.enabled are mutually exclusive (KEDA manages its own HPA)" $name) -}}
{{- end -}}
{{- if $svc.hpa.enabled -}}
{{- if gt (int $svc.hpa.maxReplicas) $partitions -}}
{{- fail (printf "services.%s.hpa.maxReplicas (%d) exceeds services.%s.inputTopicPartitions (%d): replicas beyond the input topic's partition count would sit idle" $name (int $svc.hpa.maxReplicas) $name $partitions) -}}
{{- end -}}
{{- if gt (int $svc.hpa.minReplicas) (int $svc.hpa.maxReplicas) -}}
{{- fail (printf "services.%s.hpa.minReplicas (%d) exceeds services.%s.hpa.maxReplicas (%d)" $name (int $svc.hpa.minReplicas) $name (int $svc.hpa.maxReplicas)) -}}
{{- end -}}
{{- if not (and $svc.resources $svc.resources.requests $svc.resources.requests.cpu) -}}
{{- fail (printf "services.%s.hpa.enabled is true: set services.%s.resources.requests.cpu, the HPA's CPU utilisation target is relative to it" $name $name) -}}
{{- end -}}
{{- end -}}
{{- if $svc.keda.enabled -}}
{{- if gt (int $svc.keda.maxReplicaCount) $partitions -}}
{{- fail (printf "services.%s.keda.maxReplicaCount (%d) exceeds services.%s.inputTopicPartitions (%d): consumers beyond the input topic's partition count would sit idle" $name (int $svc.keda.maxReplicaCount) $name $partitions) -}}
{{- end -}}
{{- if gt (int $svc.keda.minReplicaCount) (int $svc.keda.maxReplicaCount) -}}
{{- fail (printf "services.%s.keda.minReplicaCount (%d) exceeds services.%s.keda.maxReplicaCount (%d)" $name (int $svc.keda.minReplicaCount) $name (int $svc.keda.maxReplicaCount)) -}}
{{- end -}}
{{- if not $svc.consumerGroup -}}
{{- fail (printf "services.%s.keda.enabled is true: set services.%s.consumerGroup, the consumer group whose lag KEDA scales on" $name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $root.Values.backfill.enabled -}}
{{- range $key := list "source" "target" "manifestTopic" -}}
{{- if not (index $root.Values.backfill $key) -}}
{{- fail (printf "backfill.enabled is true: set backfill.%s" $key) -}}
{{- end -}}
{{- end -}}
{{- if eq $root.Values.backfill.source $root.Values.backfill.target -}}
{{- fail (printf "backfill.source and backfill.target are both %q: a backfill must write to another topic" $root.Values.backfill.source) -}}
{{- end -}}
{{- $catalog := include "rekey.catalog" $root | fromYaml -}}
{{- $topics := list -}}
{{- range $topic := ($catalog.topics | default list) -}}
{{- $topics = append $topics $topic.name -}}
{{- end -}}
{{- $sources := $topics -}}
{{- range $source := ($catalog.sources | default list) -}}
{{- $sources = append $sources $source.name -}}
{{- end -}}
{{- if not (has $root.Values.backfill.source $sources) -}}
{{- fail (printf "backfill.source %q is not a source or topic of the catalog (catalog sources and topics: %s)" $root.Values.backfill.source (join ", " $sources)) -}}
{{- end -}}
{{- range $key := list "target" "manifestTopic" -}}
{{- if not (has (index $root.Values.backfill $key) $topics) -}}
{{- fail (printf "backfill.%s %q is not a topic of the catalog (catalog topics: %s)" $key (index $root.Values.backfill $key) (join ", " $topics)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
An IntOrString value: strings (e.g. "50%") quoted, numbers as integers.
*/}}
{{- define "rekey.intOrString" -}}
{{- if kindIs "string" . -}}
{{- . | quote -}}
{{- else -}}
{{- int . -}}
{{- end -}}
{{- end -}}

{{/*
Image of the backfill driver and executors. Takes the root context.
*/}}
{{- define "rekey.backfill.image" -}}
{{- include "rekey.image" (dict "image" .Values.backfill.image "root" .) -}}
{{- end -}}

{{/*
Name of the backfill Job / SparkApplication: <fullname>-backfill-<hash>, the hash covering the backfill
values and the image, so that changed parameters create a new run instead of patching an immutable Job.
Takes the root context.
*/}}
{{- define "rekey.backfill.runName" -}}
{{- $hash := dict "backfill" .Values.backfill "image" (include "rekey.backfill.image" .) | toJson | sha256sum | trunc 8 -}}
{{- include "rekey.componentName" (dict "root" . "component" (printf "backfill-%s" $hash)) -}}
{{- end -}}

{{/*
`rekey backfill` arguments shared by the Job and the SparkApplication. Takes the root context.
*/}}
{{- define "rekey.backfill.args" -}}
- backfill
- --source
- {{ .Values.backfill.source | quote }}
- --target
- {{ .Values.backfill.target | quote }}
- --manifest-topic
- {{ .Values.backfill.manifestTopic | quote }}
{{- end -}}

{{/*
Environment of the backfill driver and executors. Takes the root context.
*/}}
{{- define "rekey.backfill.env" -}}
{{ include "rekey.commonEnv" (dict "root" .) }}
{{- include "rekey.secretEnv" (dict "root" . "sink" false) }}
- name: HOME
  value: /tmp
{{- with .Values.backfill.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
A scalar as text for command lines and string maps: whole numbers without exponent or decimals
(YAML numbers arrive as float64, which %v would print as 1e+06).
*/}}
{{- define "rekey.scalar" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}
