package codec

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// What people configure, kept beyond the store's columns: an automation's
// details, a trigger instance's configuration and filter, a schedule's
// configuration, an agent event's payload. Each is converted by Mirror
// (see the package comment).

// AutomationDetails extracts the fields of an automation the store keeps
// in Details (input_specs, connections, default_inputs, marked_outputs,
// activation_state), as a prose.persist.v1.AutomationDetails (nil when
// none is set).
func AutomationDetails(a *platformv1.Automation) ([]byte, error) {
	d := &persistv1.AutomationDetails{
		ActivationState: persistv1.AutomationActivationState(a.GetActivationState()),
		MarkedOutputs:   a.GetMarkedOutputs(),
	}
	if len(a.GetConnections()) > 0 {
		d.Connections = make(map[string]*persistv1.BookConnection, len(a.GetConnections()))
		for k, c := range a.GetConnections() {
			d.Connections[k] = &persistv1.BookConnection{ConnectionId: c.GetConnectionId(), Endpoint: c.GetEndpoint()}
		}
	}
	for _, spec := range a.GetInputSpecs() {
		p := &persistv1.AutomationInputSpec{}
		if err := Mirror(p, spec); err != nil {
			return nil, err
		}
		d.InputSpecs = append(d.InputSpecs, p)
	}
	if len(a.GetDefaultInputs()) > 0 {
		var err error
		if d.DefaultInputs, err = ValuesToStored(a.GetDefaultInputs()); err != nil {
			return nil, err
		}
	}
	if proto.Size(d) == 0 {
		return nil, nil
	}
	return marshal.Marshal(d)
}

// ApplyAutomationDetails copies the stored detail fields into out.
func ApplyAutomationDetails(out *platformv1.Automation, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	d, err := DecodeAutomationDetails(b)
	if err != nil {
		return err
	}
	out.Connections, out.InputSpecs, out.DefaultInputs = nil, nil, nil
	if len(d.GetConnections()) > 0 {
		out.Connections = make(map[string]*platformv1.BookConnection, len(d.GetConnections()))
		for k, c := range d.GetConnections() {
			out.Connections[k] = &platformv1.BookConnection{ConnectionId: c.GetConnectionId(), Endpoint: c.GetEndpoint()}
		}
	}
	for _, p := range d.GetInputSpecs() {
		spec := &platformv1.AutomationInputSpec{}
		if err := Mirror(spec, p); err != nil {
			return fmt.Errorf("decode automation details: %w", err)
		}
		out.InputSpecs = append(out.InputSpecs, spec)
	}
	if len(d.GetDefaultInputs()) > 0 {
		if out.DefaultInputs, err = ValuesFromStored(d.GetDefaultInputs()); err != nil {
			return fmt.Errorf("decode automation details: %w", err)
		}
	}
	out.ActivationState = platformv1.AutomationActivationState(d.GetActivationState())
	out.MarkedOutputs = d.GetMarkedOutputs()
	return nil
}

// DecodeAutomationDetails decodes an automation's stored details.
func DecodeAutomationDetails(b []byte) (*persistv1.AutomationDetails, error) {
	d := &persistv1.AutomationDetails{}
	if err := proto.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("decode automation details: %w", err)
	}
	return d, nil
}

// EncodeTriggerConfig encodes what a trigger instance keeps beyond its
// columns as a prose.persist.v1.TriggerConfig.
func EncodeTriggerConfig(cfg map[string]*platformv1.BdkValue, filter *platformv1.Expression) ([]byte, error) {
	out := &persistv1.TriggerConfig{}
	if len(cfg) > 0 {
		out.Configuration = make(map[string]*persistv1.BdkValue, len(cfg))
		for k, v := range cfg {
			p := &persistv1.BdkValue{}
			if err := Mirror(p, v); err != nil {
				return nil, err
			}
			out.Configuration[k] = p
		}
	}
	if filter != nil {
		out.FilterExpression = &persistv1.Expression{}
		if err := Mirror(out.FilterExpression, filter); err != nil {
			return nil, err
		}
	}
	return marshal.Marshal(out)
}

// DecodeTriggerConfig reads what EncodeTriggerConfig wrote back as the
// API's configuration and filter (in a TriggerInstance holding only those
// two).
func DecodeTriggerConfig(b []byte) (*platformv1.TriggerInstance, error) {
	in := &persistv1.TriggerConfig{}
	if err := proto.Unmarshal(b, in); err != nil {
		return nil, err
	}
	out := &platformv1.TriggerInstance{}
	if len(in.GetConfiguration()) > 0 {
		out.Configuration = make(map[string]*platformv1.BdkValue, len(in.GetConfiguration()))
		for k, p := range in.GetConfiguration() {
			v := &platformv1.BdkValue{}
			if err := Mirror(v, p); err != nil {
				return nil, err
			}
			out.Configuration[k] = v
		}
	}
	if in.GetFilterExpression() != nil {
		out.FilterExpression = &platformv1.Expression{}
		if err := Mirror(out.FilterExpression, in.GetFilterExpression()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ScheduleConfigToStored reads the API's schedule configuration as the
// stored one, which the scheduler computes on (nil stays nil:
// schedule.Parse says it is required).
func ScheduleConfigToStored(cfg *platformv1.ScheduleConfig) (*persistv1.ScheduleConfig, error) {
	if cfg == nil {
		return nil, nil
	}
	out := &persistv1.ScheduleConfig{}
	return out, Mirror(out, cfg)
}

// ScheduleConfigFromStored renders a stored schedule configuration as the
// API's.
func ScheduleConfigFromStored(cfg *persistv1.ScheduleConfig) (*platformv1.ScheduleConfig, error) {
	out := &platformv1.ScheduleConfig{}
	return out, Mirror(out, cfg)
}

// EventPayload encodes an agent event for the store's payload column: a
// prose.persist.v1.Event, without the fields the store keeps in columns
// (name, state, times).
func EventPayload(ev *platformv1.Event) ([]byte, error) {
	p := &persistv1.Event{Exception: ev.GetException()}
	if err := copyPayload(p.ProtoReflect(), ev.ProtoReflect()); err != nil {
		return nil, err
	}
	return proto.Marshal(p)
}

// EventFromPayload decodes what EventPayload wrote (the caller sets the
// fields kept in columns).
func EventFromPayload(b []byte) (*platformv1.Event, error) {
	p := &persistv1.Event{}
	if err := proto.Unmarshal(b, p); err != nil {
		return nil, err
	}
	ev := &platformv1.Event{Exception: p.GetException()}
	if err := copyPayload(ev.ProtoReflect(), p.ProtoReflect()); err != nil {
		return nil, err
	}
	return ev, nil
}

// copyPayload sets dst's payload member to src's (platform.v1.Event and
// persist.v1.Event, either way). The members have the same names, and
// their messages mirror each other field by field
// (TestPersistMirrorsPlatform), so a member is converted by Mirror.
func copyPayload(dst, src protoreflect.Message) error {
	sf := src.WhichOneof(src.Descriptor().Oneofs().ByName("payload"))
	if sf == nil {
		return nil
	}
	df := dst.Descriptor().Fields().ByName(sf.Name())
	if df == nil {
		return fmt.Errorf("event payload %s has no stored form", sf.Name())
	}
	m := dst.NewField(df).Message()
	if err := Mirror(m.Interface(), src.Get(sf).Message().Interface()); err != nil {
		return fmt.Errorf("event payload %s: %w", sf.Name(), err)
	}
	dst.Set(df, protoreflect.ValueOfMessage(m))
	return nil
}

// AutomationDeactivated reports whether an automation's stored details
// set it AUTOMATION_ACTIVATION_STATE_DEACTIVATED (false when they cannot
// be read: they are checked when written).
func AutomationDeactivated(details []byte) bool {
	d := &persistv1.AutomationDetails{}
	if err := proto.Unmarshal(details, d); err != nil {
		return false
	}
	return d.GetActivationState() == persistv1.AutomationActivationState_AUTOMATION_ACTIVATION_STATE_DEACTIVATED
}
