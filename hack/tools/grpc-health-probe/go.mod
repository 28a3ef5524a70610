// grpc-health-probe: /bin/grpc_health_probe of the catalog image (OLM v0
// probes its registry pods with it); the version operator-registry pins.
module github.com/mydeployment-io/mydeployment-operator/hack/tools/grpc-health-probe

go 1.26.3

tool github.com/grpc-ecosystem/grpc-health-probe

require (
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/go-jose/go-jose/v4 v4.1.4 // indirect
	github.com/grpc-ecosystem/grpc-health-probe v0.4.53 // indirect
	github.com/spiffe/go-spiffe/v2 v2.8.1 // indirect
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260226221140-a57be14db171 // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
