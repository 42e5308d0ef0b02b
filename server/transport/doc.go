// Package transport is what every Prose service and every entry of the
// interceptor chain share: AIP-193 errors (Error, the status helpers, the
// transport's own reasons), the caller (Principal, RequireWorkspace), the
// request id, and Middleware, the named chain entry. The entries live in
// the packages beside it (one each: recovery, requestid, logging, metrics,
// normalize, auth, validate; limits and admission bound requests), and
// package chain puts them together, in one place, in front of the
// *grpc.Server and its in-process channel, Local. It knows no service:
// the services live in package server.
package transport
