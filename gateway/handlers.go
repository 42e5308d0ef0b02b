package gateway

import (
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// Handlers lists the generated HTTP registrations of every Prose service, in
// the order they are added to the mux.
func Handlers() []RegisterFunc {
	return []RegisterFunc{
		platformv1.RegisterRunServiceHandler,
		platformv1.RegisterAutomationServiceHandler,
		platformv1.RegisterWorkspaceServiceHandler,
		platformv1.RegisterOrganizationServiceHandler,
		platformv1.RegisterExceptionServiceHandler,
		platformv1.RegisterEventServiceHandler,
		platformv1.RegisterApiKeyServiceHandler,
		platformv1.RegisterFileServiceHandler,
		bookv1.RegisterBookServiceHandler,
		bookv1.RegisterConnectionServiceHandler,
		legacyv1.RegisterLegacyServiceHandler,
		legacyv2.RegisterLegacyServiceHandler,
	}
}
