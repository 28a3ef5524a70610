module github.com/mydeployment-io/mydeployment-operator/hack/dashboards

go 1.26.3

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
