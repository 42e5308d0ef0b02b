// Command vatbook serves the example VAT book (examples/vatbook) over the
// external book protocol.
//
//	go run ./examples/vatbook/cmd/vatbook -addr 127.0.0.1:8081
//	go run ./examples/vatbook/cmd/vatbook -descriptor http://127.0.0.1:8081
//
// The second prints the JSON to register it in a workspace
// (POST /api/v1/organizations/{org}/workspaces/{ws}/books). The api keys a
// connection may hold are read from VATBOOK_API_KEYS (comma-separated; an
// environment variable, not a flag, so that they are not in the process
// list).
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/examples/vatbook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	descriptor := flag.String("descriptor", "", "print the book's registration JSON for this endpoint URL and exit")
	flag.Parse()
	var keys []string
	for _, k := range strings.Split(os.Getenv("VATBOOK_API_KEYS"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	book := vatbook.New(keys...)
	if *descriptor != "" {
		raw, err := protojson.Marshal(book.Descriptor(*descriptor))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintln(os.Stdout, string(raw))
		return
	}
	srv := &http.Server{Addr: *addr, Handler: book, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving the book example.vat at http://%s", *addr)
	if len(keys) == 0 {
		log.Print("VATBOOK_API_KEYS is empty: get the vat on an amount refuses every call")
	}
	log.Fatal(srv.ListenAndServe())
}
