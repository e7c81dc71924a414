# The capture workload's S3 output test (test/capture/outputs.test.ts) runs a real S3 server (gofakes3
# with Signature V4 auth, hack/s3/s3server.go), built from the Go module proxy into the tools cache
# outside the clone by hack/s3/build.sh, once.
.PHONY: s3-server
s3-server:
	@$(STEP) s3-server hack/s3/build.sh >/dev/null

tools: s3-server
