{{/* The labels of the operator's pods, and its Deployment's selector. */}}
{{- define "robot-operator.selectorLabels" -}}
app.kubernetes.io/name: robot-operator
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's ServiceAccount, as a subject of a binding. */}}
{{- define "robot-operator.subject" -}}
- kind: ServiceAccount
  name: robot-operator
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* Everything the operator does to the API, cluster-wide or in one namespace; see artifacts/deploy/clusterrole.yaml for why each verb. */}}
{{- define "robot-operator.rules" -}}
- apiGroups: ["robot.dev"]
  resources: ["robots"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["robot.dev"]
  resources: ["robots/status"]
  verbs: ["patch"]
- apiGroups: ["robot.dev"]
  resources: ["robots/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
- apiGroups: ["apps"]
  resources: ["replicasets"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
{{- if ne (toString .Values.policy.preflight) "false" }}
# The dry run of a changed pod template (nothing is stored), and what its
# pods name (docs/security.md).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["configmaps", "serviceaccounts"]
  verbs: ["get"]
{{- end }}
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways"]
  verbs: ["list", "watch"]
{{- if .Values.configRollouts.configMaps }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch"]
{{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}

{{/* The rule that lets the operator watch the metadata of Secrets, for
the Robots that roll on config changes: configRollouts.secrets, off by
default (the component artifacts/config-rollouts-secrets). */}}
{{- define "robot-operator.configSecretsRule" -}}
{{- if .Values.configRollouts.secrets }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["list", "watch"]
{{- end }}
{{- end }}

{{/* The operator's image: repository:tag, and @digest when a digest is set. */}}
{{- define "robot-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
