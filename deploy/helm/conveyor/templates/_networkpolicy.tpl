{{/* Pieces of networkpolicy.yaml. */}}
{{- define "conveyor.np.dns" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end -}}
{{- define "conveyor.np.podPeer" -}}
- podSelector:
    matchLabels:
      app.kubernetes.io/name: {{ include "conveyor.name" .root }}
      app.kubernetes.io/instance: {{ .root.Release.Name }}
      app.kubernetes.io/component: {{ .component }}
{{- end -}}
{{- /* Egress to one store: (dict "root" $ "store" "mongodb"|"nats"|"s3"). */ -}}
{{- define "conveyor.np.store" -}}
{{- $np := .root.Values.networkPolicy -}}
{{- $eval := dict "mongodb" .root.Values.evaluation.ferretdb.enabled "nats" .root.Values.evaluation.nats.enabled "s3" .root.Values.evaluation.s3.enabled -}}
{{- $evalComponent := dict "mongodb" "ferretdb" "nats" "nats" "s3" "s3" -}}
{{- $evalPort := dict "mongodb" 27017 "nats" 4222 "s3" 7070 -}}
{{- $ports := get (dict "mongodb" $np.mongodbPorts "nats" $np.natsPorts "s3" $np.s3Ports) .store -}}
{{- if get $eval .store -}}
- to:
    {{- include "conveyor.np.podPeer" (dict "root" .root "component" (get $evalComponent .store)) | nindent 4 }}
  ports:
    - port: {{ get $evalPort .store }}
      protocol: TCP
{{- else -}}
- ports:
    {{- range $ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $np.storePeers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
