{{/* Names, labels and the pieces every template shares. */}}
{{- define "rayop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rayop.fullname" -}}
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

{{- define "rayop.component" -}}
{{- default .Chart.Name .Values.componentOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by every object. No chart version or release-service label: the kustomize
base is this chart's output and must not change with the tool that rendered it. */}}
{{- define "rayop.labels" -}}
app.kubernetes.io/name: {{ include "rayop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ include "rayop.component" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "rayop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rayop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rayop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rayop.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* --feature-gates=A=true,B=false from the featureGates list. */}}
{{- define "rayop.featureGates" -}}
{{- $out := list -}}
{{- range .Values.featureGates -}}
{{- $out = append $out (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* "true" when the RayCronJob gate is enabled. */}}
{{- define "rayop.cronGate" -}}
{{- $on := false -}}
{{- range .Values.featureGates -}}
{{- if and (eq .name "RayCronJob") .enabled -}}{{- $on = true -}}{{- end -}}
{{- end -}}
{{- $on -}}
{{- end -}}

{{/* The namespaces whose objects are reconciled: watchNamespace, or the release namespace
for a single-namespace install, or none (= all). */}}
{{- define "rayop.watchNamespaces" -}}
{{- if .Values.watchNamespace -}}
{{- join "," .Values.watchNamespace -}}
{{- else if .Values.singleNamespaceInstall -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "rayop.batchSchedulerName" -}}
{{- if and .Values.batchScheduler.enabled .Values.batchScheduler.name -}}
{{- fail "batchScheduler.enabled and batchScheduler.name must not both be set" -}}
{{- else if .Values.batchScheduler.enabled -}}
volcano
{{- else -}}
{{- .Values.batchScheduler.name -}}
{{- end -}}
{{- end -}}

{{/* Shm sizeLimit in MiB: the segment, twice the growth ceiling while a grown copy replaces it
(cache/grow.c renames it over the old one), plus headroom. */}}
{{- define "rayop.shmMiB" -}}
{{- $cap := int .Values.cache.capacityMiB -}}
{{- $max := int .Values.cache.maxMiB -}}
{{- if gt $max 0 -}}
{{- add (mul 2 (max $cap $max)) 32 -}}
{{- else -}}
{{- add $cap 32 -}}
{{- end -}}
{{- end -}}

{{/* The rules of KubeRay's operator role, plus what rayop's watcher caches (PVCs) and Leases
for its per-kind leader election. Shared by the ClusterRole and the namespaced Roles. */}}
{{- define "rayop.rules" -}}
- apiGroups: [""]
  resources: [events, pods/status, services]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [create, delete, deletecollection, get, list, patch, update, watch]
- apiGroups: [""]
  resources: [pods/proxy, services/status]
  verbs: [get, patch, update]
- apiGroups: [""]
  resources: [pods/resize]
  verbs: [patch]
- apiGroups: [""]
  resources: [secrets]
  verbs: [create, get, list, update, watch]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [create, delete, get, list, watch]
- apiGroups: [""]
  resources: [services/proxy]
  verbs: [create, get, patch, update]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [create, delete, get, list, update, watch]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create, get, list, update, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [extensions, networking.k8s.io]
  resources: [ingresses]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [route.openshift.io]
  resources: [routes]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [cert-manager.io]
  resources: [issuers]
  verbs: [create, get, list, watch]
- apiGroups: [cert-manager.io]
  resources: [certificates]
  verbs: [create, get, list, update, watch]
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways, httproutes]
  verbs: [create, delete, get, list, update, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingressclasses]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [create, delete, get, list, update, watch]
- apiGroups: [ray.io]
  resources: [rayclusters, raycronjobs, rayjobs, rayservices]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [ray.io]
  resources: [rayclusters/finalizers, raycronjobs/finalizers, rayjobs/finalizers, rayservices/finalizers]
  verbs: [update]
- apiGroups: [ray.io]
  resources: [rayclusters/status, raycronjobs/status, rayjobs/status, rayservices/status]
  verbs: [get, patch, update]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [create, delete, get, list, watch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles]
  verbs: [create, delete, get, list, update, watch]
- apiGroups: [route.openshift.io]
  resources: [routes]
  verbs: [create, delete, get, list, patch, update, watch]
{{- $bs := include "rayop.batchSchedulerName" . }}
{{- if eq $bs "volcano" }}
- apiGroups: [scheduling.volcano.sh]
  resources: [podgroups]
  verbs: [create, delete, get, list, update, watch]
{{- end }}
{{- if eq $bs "scheduler-plugins" }}
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [create, get, list, watch]
{{- end }}
{{- end -}}

{{/* The probes of one container: $ is the root context, .port the container's health port. */}}
{{- define "rayop.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  initialDelaySeconds: {{ .root.Values.livenessProbe.initialDelaySeconds }}
  periodSeconds: {{ .root.Values.livenessProbe.periodSeconds }}
  failureThreshold: {{ .root.Values.livenessProbe.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  initialDelaySeconds: {{ .root.Values.readinessProbe.initialDelaySeconds }}
  periodSeconds: {{ .root.Values.readinessProbe.periodSeconds }}
  failureThreshold: {{ .root.Values.readinessProbe.failureThreshold }}
{{- end -}}

{{/* Environment of every container: the Pod's identity (the leader election holder) and the
user's env list. */}}
{{- define "rayop.env" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- with .Values.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "rayop.mounts" -}}
- name: shm
  mountPath: /dev/shm
- name: state
  mountPath: /run/rayop
{{- end -}}
