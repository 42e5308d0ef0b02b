package testenv

import (
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Binding is the HTTP binding of an RPC (or, in Err, why it has none
// that the tests know).
type Binding struct {
	Method, Path, RPC string
	Err               string
}

// ContractBindings reads the HTTP binding of every RPC from the compiled protos.
func ContractBindings() []Binding {
	var routes []Binding
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "prose.") {
			return true
		}
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			sd := svcs.Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					routes = append(routes, Binding{Err: fmt.Sprintf("%s has no HTTP binding", md.FullName())})
					continue
				}
				var method, path string
				switch p := rule.GetPattern().(type) {
				case *annotations.HttpRule_Get:
					method, path = http.MethodGet, p.Get
				case *annotations.HttpRule_Post:
					method, path = http.MethodPost, p.Post
				case *annotations.HttpRule_Patch:
					method, path = http.MethodPatch, p.Patch
				case *annotations.HttpRule_Put:
					method, path = http.MethodPut, p.Put
				case *annotations.HttpRule_Delete:
					method, path = http.MethodDelete, p.Delete
				default:
					routes = append(routes, Binding{Err: fmt.Sprintf("%s: unsupported HTTP pattern %T", md.FullName(), p)})
					continue
				}
				routes = append(routes, Binding{Method: method, Path: path, RPC: fmt.Sprintf("/%s/%s", sd.FullName(), md.Name())})
			}
		}
		return true
	})
	return routes
}
