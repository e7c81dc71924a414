# Pinned versions of the chart tooling (sourced by hack/chart/build.sh and read by test/chart).
HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.8.0
