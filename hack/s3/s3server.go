// A small S3-compatible server for the capture workload's S3 output test (test/capture/outputs.test.ts):
// rclone's gofakes3 (the S3 REST API with AWS Signature V4 authentication) over its in-memory
// backend. It listens on 127.0.0.1 (port 0: a free one), prints "listening on http://<addr>" once
// it accepts connections, and serves until killed. The one key pair comes from the environment
// (S3SERVER_ACCESS_KEY, S3SERVER_SECRET_KEY), never from the command line.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	key, secret := os.Getenv("S3SERVER_ACCESS_KEY"), os.Getenv("S3SERVER_SECRET_KEY")
	if key == "" || secret == "" {
		log.Fatal("S3SERVER_ACCESS_KEY and S3SERVER_SECRET_KEY must be set")
	}
	faker := gofakes3.New(s3mem.New(), gofakes3.WithV4Auth(map[string]string{key: secret}))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, faker.Server()))
}
