package gateway

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// Handlers lists the generated HTTP registrations of every Prose service, in
// the order they are added to the mux: each calls its service through a
// client on the connection given to New (RegisterXxxHandlerClient), never
// the implementation directly.
func Handlers() []RegisterFunc {
	return []RegisterFunc{
		Register(platformv1.NewRunServiceClient, platformv1.RegisterRunServiceHandlerClient),
		Register(platformv1.NewRunHistoryServiceClient, platformv1.RegisterRunHistoryServiceHandlerClient),
		Register(platformv1.NewAutomationServiceClient, platformv1.RegisterAutomationServiceHandlerClient),
		Register(platformv1.NewWorkspaceServiceClient, platformv1.RegisterWorkspaceServiceHandlerClient),
		Register(platformv1.NewOrganizationServiceClient, platformv1.RegisterOrganizationServiceHandlerClient),
		Register(platformv1.NewExceptionServiceClient, platformv1.RegisterExceptionServiceHandlerClient),
		Register(platformv1.NewEventServiceClient, platformv1.RegisterEventServiceHandlerClient),
		Register(platformv1.NewApiKeyServiceClient, platformv1.RegisterApiKeyServiceHandlerClient),
		Register(platformv1.NewFileServiceClient, platformv1.RegisterFileServiceHandlerClient),
		Register(platformv1.NewScheduleServiceClient, platformv1.RegisterScheduleServiceHandlerClient),
		Register(platformv1.NewTriggerServiceClient, platformv1.RegisterTriggerServiceHandlerClient),
		Register(platformv1.NewWebhookServiceClient, platformv1.RegisterWebhookServiceHandlerClient),
		Register(platformv1.NewGuideEntryServiceClient, platformv1.RegisterGuideEntryServiceHandlerClient),
		Register(platformv1.NewAutomationRevisionServiceClient, platformv1.RegisterAutomationRevisionServiceHandlerClient),
		Register(platformv1.NewInsightsServiceClient, platformv1.RegisterInsightsServiceHandlerClient),
		Register(platformv1.NewAutomationTestServiceClient, platformv1.RegisterAutomationTestServiceHandlerClient),
		Register(bookv1.NewBookServiceClient, bookv1.RegisterBookServiceHandlerClient),
		Register(bookv1.NewConnectionServiceClient, bookv1.RegisterConnectionServiceHandlerClient),
		Register(legacyv1.NewLegacyServiceClient, legacyv1.RegisterLegacyServiceHandlerClient),
		Register(legacyv2.NewLegacyServiceClient, legacyv2.RegisterLegacyServiceHandlerClient),
	}
}

// Register joins a generated client constructor (NewXxxClient) and its
// generated RegisterXxxHandlerClient into a RegisterFunc.
func Register[C any](newClient func(grpc.ClientConnInterface) C, register func(context.Context, *runtime.ServeMux, C) error) RegisterFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
		return register(ctx, mux, newClient(conn))
	}
}
