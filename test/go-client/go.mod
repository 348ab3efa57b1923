module conveyor.local/go-client-check

go 1.25

require (
	github.com/buildkite/go-buildkite/v4 v4.23.0 // indirect
	github.com/cenkalti/backoff v1.1.1-0.20171020064038-309aa717adbf // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	golang.org/x/net v0.38.0 // indirect
)
