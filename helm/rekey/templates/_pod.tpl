{{/* vim: set filetype=mustache: */}}

{{/*
True ("true") when a workload keeps its state on a PersistentVolumeClaim per pod, i.e. renders as a StatefulSet.
Takes a workload's values.
*/}}
{{- define "rekey.persistent" -}}
{{- if and .persistence .persistence.enabled -}}true{{- end -}}
{{- end -}}

{{/*
Kind of a workload: StatefulSet with persistence, else Deployment. Takes a workload's values.
*/}}
{{- define "rekey.workloadKind" -}}
{{- ternary "StatefulSet" "Deployment" (eq (include "rekey.persistent" .) "true") -}}
{{- end -}}

{{/*
Name of a workload's Deployment or StatefulSet. A StatefulSet's is shorter: its pods carry a
controller-revision-hash label whose value is the name plus a hash suffix, and must fit a label value.
Usage: {{ include "rekey.workloadName" (dict "root" $ "component" "acl" "values" $svc) }}
*/}}
{{- define "rekey.workloadName" -}}
{{- if include "rekey.persistent" .values -}}
{{- printf "%s-%s" (include "rekey.fullname" .root | trunc (int (sub 51 (len .component))) | trimSuffix "-") .component -}}
{{- else -}}
{{- include "rekey.componentName" (dict "root" .root "component" .component) -}}
{{- end -}}
{{- end -}}

{{/*
Name of the headless Service that gives a StatefulSet's pods their stable network names.
Usage: {{ include "rekey.headlessServiceName" (dict "root" $ "component" "acl") }}
*/}}
{{- define "rekey.headlessServiceName" -}}
{{- include "rekey.componentName" (dict "root" .root "component" (printf "%s-headless" .component)) -}}
{{- end -}}

{{/*
Pod template of a service's Deployment or StatefulSet. With persistence the data volume is the StatefulSet's
volume claim template (not listed here) and the pod's own name is its worker id (REKEY_WORKER_ID): a pod
rescheduled under the same name keeps its transactional id and its state directory.
Usage: {{ include "rekey.podTemplate" (dict "root" $ "workload" $workload) }}
*/}}
{{- define "rekey.podTemplate" -}}
{{- $root := .root -}}
{{- $workload := .workload -}}
{{- $name := $workload.name -}}
{{- $svc := $workload.values -}}
{{- $component := dict "root" $root "component" $name -}}
{{- $sinkServices := splitList "," (include "rekey.sinkServiceNames" $root) -}}
{{- $persistent := include "rekey.persistent" $svc -}}
metadata:
  labels:
    {{- include "rekey.componentLabels" $component | nindent 4 }}
    {{- with $svc.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- include "rekey.catalogChecksum" $root | nindent 4 }}
    {{- if $root.Values.metrics.podAnnotations }}
    prometheus.io/scrape: "true"
    prometheus.io/port: "6066"
    prometheus.io/path: "/metrics"
    {{- end }}
    {{- with $svc.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "rekey.serviceAccountName" $root }}
  automountServiceAccountToken: {{ $root.Values.serviceAccount.automountServiceAccountToken }}
  {{- with (include "rekey.imagePullSecrets" $root | trim) }}
  {{- . | nindent 2 }}
  {{- end }}
  terminationGracePeriodSeconds: {{ $svc.terminationGracePeriodSeconds }}
  {{- with $svc.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- with $svc.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $svc.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $svc.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $svc.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ $name }}
      image: {{ include "rekey.image" (dict "image" $root.Values.image "root" $root) | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command:
        - rekey
      args:
        {{- toYaml $workload.args | nindent 8 }}
      ports:
        - name: http
          containerPort: 6066
          protocol: TCP
      env:
        {{- include "rekey.commonEnv" (dict "root" $root "logLevel" $svc.logLevel) | nindent 8 }}
        {{- with (include "rekey.secretEnv" (dict "root" $root "sink" (has $workload.service $sinkServices)) | trim) }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- if has $workload.service $sinkServices }}
        - name: REKEY_SINK_TOPIC
          value: {{ $root.Values.sinkDatabase.topic | quote }}
        - name: REKEY_SINK_TABLE
          value: {{ $root.Values.sinkDatabase.table | quote }}
        {{- end }}
        {{- if has $workload.service (list "acl" "projection") }}
        - name: REKEY_LIVENESS_S
          value: {{ $root.Values.health.loopSeconds | toString | quote }}
        - name: REKEY_RESTORE_STALL_S
          value: {{ $root.Values.health.restoreStallSeconds | toString | quote }}
        {{- end }}
        {{- if $root.Values.services.acl.stages.split }}
        {{- if eq $workload.service "acl" }}
        - name: REKEY_INTERNAL_PARTITIONS
          value: {{ $root.Values.services.acl.stages.sequence.inputTopicPartitions | default $root.Values.services.acl.inputTopicPartitions | int | toString | quote }}
        {{- end }}
        {{- end }}
        {{- with $svc.consumerGroup }}
        {{- if eq $name "sink" }}
        - name: REKEY_SINK_GROUP_ID
          value: {{ . | quote }}
        {{- else if ne $name "reconciler" }}
        - name: REKEY_APP_ID
          value: {{ . | quote }}
        {{- end }}
        {{- end }}
        {{- if $persistent }}
        - name: REKEY_WORKER_ID
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- end }}
        {{- with $svc.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $root.Values.startupProbe }}
      {{- if .enabled }}
      startupProbe:
        httpGet:
          path: /healthz
          port: http
        {{- include "rekey.probeTimings" . | nindent 8 }}
      {{- end }}
      {{- end }}
      {{- with $root.Values.livenessProbe }}
      {{- if .enabled }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        {{- include "rekey.probeTimings" . | nindent 8 }}
      {{- end }}
      {{- end }}
      {{- with $root.Values.readinessProbe }}
      {{- if .enabled }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        {{- include "rekey.probeTimings" . | nindent 8 }}
      {{- end }}
      {{- end }}
      {{- with $svc.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.containerSecurityContext | nindent 8 }}
      volumeMounts:
        {{- include "rekey.volumeMounts" $root | nindent 8 }}
  volumes:
    {{- include "rekey.volumes" (dict "root" $root "dataSizeLimit" $svc.dataDirSizeLimit "persistent" $persistent) | nindent 4 }}
{{- end -}}

{{/*
The volume claim template of a StatefulSet's data directory, from a workload's persistence values.
Usage: {{ include "rekey.dataVolumeClaimTemplate" (dict "root" $ "component" "acl" "persistence" $svc.persistence) }}
*/}}
{{- define "rekey.dataVolumeClaimTemplate" -}}
{{- $persistence := .persistence -}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: data
    labels:
      {{- include "rekey.selectorLabels" (dict "root" .root "component" .component) | nindent 6 }}
    {{- with $persistence.annotations }}
    annotations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
  spec:
    accessModes:
      {{- toYaml $persistence.accessModes | nindent 6 }}
    {{- with $persistence.storageClassName }}
    {{- /* "-" asks for no class at all (no dynamic provisioning), as in the bitnami charts. */}}
    storageClassName: {{ ternary "" . (eq . "-") | quote }}
    {{- end }}
    resources:
      requests:
        storage: {{ $persistence.size | quote }}
{{- end -}}
