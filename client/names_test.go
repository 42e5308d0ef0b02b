package client_test

import "strings"

func splitWorkspace(name string) (org, ws string) {
	parts := strings.Split(name, "/")
	return parts[1], parts[3]
}

func lastSegment(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }
