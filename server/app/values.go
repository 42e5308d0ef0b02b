package app

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/client"
)

// plainValueJSON converts a plain JSON value to the JSON of the API's
// Value, for the gateway's error on a body that gives the one where the
// other is expected (gateway.Options.ValueExample).
func plainValueJSON(plain []byte) ([]byte, error) {
	v, err := client.ValueFromJSON(plain)
	if err != nil {
		return nil, err
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
