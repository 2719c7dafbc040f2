// The third-party CRDs the test control plane installs, taken from their projects' Go modules
// (hack/build-controlplane.sh copies them out of the module cache). No Go code is built here.
module nemotron-operator/hack/controlplane/crds

go 1.26.6

require (
	github.com/kedacore/keda/v2 v2.20.2 // indirect
	github.com/prometheus-operator/prometheus-operator v0.85.0 // indirect
	sigs.k8s.io/gateway-api v1.6.3 // indirect
	sigs.k8s.io/gateway-api-inference-extension v1.6.2 // indirect
	sigs.k8s.io/karpenter v1.14.1 // indirect
)
