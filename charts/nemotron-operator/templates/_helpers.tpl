{{/* The chart's name, overridable. */}}
{{- define "nemotron-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the prefix of every object this chart creates. */}}
{{- define "nemotron-operator.fullname" -}}
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

{{- define "nemotron-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: stable across upgrades (a Deployment's selector is immutable). */}}
{{- define "nemotron-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nemotron-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nemotron-operator.labels" -}}
helm.sh/chart: {{ include "nemotron-operator.chart" . }}
{{ include "nemotron-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: nemotron-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "nemotron-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nemotron-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository@digest when a digest is set (it wins over the tag), else repository:tag. */}}
{{- define "nemotron-operator.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The namespaced rules: exactly the API calls the operator makes in a served namespace. The e2e
suite (tests/e2e) records every request the operator makes and fails on a call the chart does
not grant, and on a grant no call uses unless it says why the grant is kept. No Secrets: the HF
token reaches vLLM through a secretKeyRef the kubelet resolves.
*/}}
{{- define "nemotron-operator.namespacedRules" -}}
# patch: the NodePool finalizer (a cluster-scoped NodePool cannot have a namespaced owner).
# finalizers/update: owner references with blockOwnerDeletion need it where the
# OwnerReferencesPermissionEnforcement admission plugin is on (OpenShift, hardened clusters).
- apiGroups: ["serving.nemotron.io"]
  resources: ["nemotrondeployments"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["serving.nemotron.io"]
  resources: ["nemotrondeployments/status"]
  verbs: ["patch"]
# The autoscaler (spec.autoscaling) sets spec.replicas through the scale subresource.
- apiGroups: ["serving.nemotron.io"]
  resources: ["nemotrondeployments/scale"]
  verbs: ["patch"]
- apiGroups: ["serving.nemotron.io"]
  resources: ["nemotrondeployments/finalizers"]
  verbs: ["update"]
# Children: listed and watched (the operator's watch cache; it re-queues their owner), applied
# server-side (patch, and create when the apply creates the object), deleted when no longer
# desired.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["list", "watch", "create", "patch", "delete"]
# The weight download Job of a shared cache (render/download_job.py): run once before the
# serving pods start; its pods are read through the pods rule below (the failing pod's message).
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list", "watch", "create", "patch", "delete"]
# spec.networkPolicy's (render/network_policy.py)
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
# A multi-node replica on StatefulSets: the leader of a replica whose worker died is deleted
# (its StatefulSet starts it again) so that the ranks re-form (controller/decide/ranks.py).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["delete"]
# The readiness gate of the behavioural check: one condition in a serving pod's status.
- apiGroups: [""]
  resources: ["pods/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# The operator lists and watches its own PodMonitors wherever the CRD is installed; it writes
# them only if allowed to.
- apiGroups: ["monitoring.coreos.com"]
  resources: ["podmonitors"]
  verbs: {{ if .Values.rbac.podMonitors }}["list", "watch", "create", "patch", "delete"]{{ else }}["list", "watch"]{{ end }}
# autoscaling.provider KEDA: the operator lists and watches its own KEDA ScaledObjects wherever
# KEDA's CRD is installed; it writes them only if allowed to.
- apiGroups: ["keda.sh"]
  resources: ["scaledobjects"]
  verbs: {{ if .Values.rbac.kedaScaledObjects }}["list", "watch", "create", "patch", "delete"]{{ else }}["list", "watch"]{{ end }}
# spec.multiNode: the operator lists and watches its own LeaderWorkerSets wherever LWS's CRD is
# installed (a multi-node replica then runs on one by default); it writes them only if allowed to.
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: {{ if .Values.rbac.leaderWorkerSets }}["list", "watch", "create", "patch", "delete"]{{ else }}["list", "watch"]{{ end }}
{{- if .Values.rbac.inferenceGateway }}
# spec.gateway (the operator runs with --inference-gateway): the InferencePool, the HTTPRoute and
# the endpoint picker's Deployment, ServiceAccount, ConfigMap, Role and RoleBinding (its Service
# is among the Services above), followed and applied like the other children.
- apiGroups: [""]
  resources: ["serviceaccounts", "configmaps"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["list", "watch", "create", "patch", "delete"]
# The Gateway an HTTPRoute attaches to, for its address (status.endpoint): read only.
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways"]
  verbs: ["get"]
# What the picker's Role grants and the operator never calls: RBAC lets the operator create that
# Role only with these permissions of its own (no `escalate`, no `bind`).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get"]
- apiGroups: ["llm-d.ai"]
  resources: ["inferenceobjectives", "inferencemodelrewrites"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if .Values.rbac.dra }}
# capacity.gpu.allocation DRA (the operator runs with --dra): the ResourceClaimTemplate its
# serving pods' claims are made from, followed and applied like the other children.
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaimtemplates"]
  verbs: ["list", "watch", "create", "patch", "delete"]
{{- end }}
{{- end -}}

{{/* The single-replica guard's Lease, in the release's namespace: create cannot be limited to
one name (the name is in the body), get and update can. */}}
{{- define "nemotron-operator.leaseRules" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: [{{ include "nemotron-operator.fullname" . | quote }}]
  verbs: ["get", "update"]
{{- end -}}

{{/* Cluster-scoped needs in either mode: GPU nodes and the pods bound to them (read-only,
listed and watched by the GPU inventory: free GPUs are allocatable minus what scheduled pods
request), and Karpenter NodePools. */}}
{{- define "nemotron-operator.clusterRules" -}}
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["list", "watch"]
{{- if .Values.watchNamespaces }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
{{- end }}
# Whether the optional kinds are served: a watch of each one's CRD, by name (no request while
# nothing changes; without this grant the operator asks discovery every 30 s instead).
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  resourceNames:
    - "podmonitors.monitoring.coreos.com"
    - "nodepools.karpenter.sh"
    - "scaledobjects.keda.sh"
    - "leaderworkersets.leaderworkerset.x-k8s.io"
    # spec.gateway's: read by name whatever rbac.inferenceGateway says (a CRD's existence only)
    - "inferencepools.inference.networking.k8s.io"
    - "httproutes.gateway.networking.k8s.io"
  verbs: ["list", "watch"]
# The operator lists and watches its own NodePools wherever Karpenter is installed; it writes
# them only if allowed to.
- apiGroups: ["karpenter.sh"]
  resources: ["nodepools"]
  verbs: {{ if .Values.rbac.karpenterNodePools }}["list", "watch", "create", "patch", "delete"]{{ else }}["list", "watch"]{{ end }}
{{- if .Values.rbac.dra }}
# The GPU inventory on DRA clusters (--dra): the GPUs the DRA driver publishes, and the claims
# holding them (every namespace's: any pod's claim takes GPUs). Read only.
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceslices", "resourceclaims"]
  verbs: ["list", "watch"]
{{- end }}
{{- end -}}
