package books

import (
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// The built-in trigger books: books with no procedures whose one trigger
// starts automations from outside (the server runs them). A trigger
// instance is made on a connection of one of them, as the reference makes
// instances on a book connection; their connections take no credentials
// and no configuration today, and group the instances made on them.
const (
	WebhookBookName  = "webhook"
	NATSBookName     = "nats"
	RabbitMQBookName = "rabbitmq"
	MQTTBookName     = "mqtt"
	// TriggerBookVersion is the version of every built-in trigger book.
	TriggerBookVersion = "1.0.0"
	// WebhookTriggerID and MessageTriggerID are the triggers' ids.
	WebhookTriggerID = "webhook"
	MessageTriggerID = "message"

	// The brokers' default URLs.
	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultRabbitMQURL = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultMQTTURL     = "tcp://127.0.0.1:1883"
)

// TriggerBooks returns the built-in trigger books: webhook, nats, rabbitmq
// and mqtt.
func TriggerBooks() []*Builtin {
	body := map[string]*bookv1.Concept{"body": concept("body", anyType, "The event's JSON body (a payload that is not JSON is one text).", nil)}
	webhook := &bookv1.Trigger{
		Id: WebhookTriggerID, Name: "Inbound webhook",
		Description:      "Each signed POST to the instance's endpoint starts its automations, once per delivery id.",
		SetupDescription: "Make a connection of this book, then a trigger instance on it; deliver to its endpoint with the X-Prose-Signature header.",
		Configuration: map[string]*bookv1.Concept{
			"secret": concept("secret", textType, "Signs deliveries (at least 16 characters; without it one is generated and shown once).", nil),
		},
		FilterCapable: true, EventType: body,
	}
	message := func(param, what, defaultURL string) *bookv1.Trigger {
		return &bookv1.Trigger{
			Id: MessageTriggerID, Name: "Message",
			Description:      "Each message of the " + what + " starts the instance's automations, once per message id.",
			SetupDescription: "Make a connection of this book, then a trigger instance on it with the " + param + " to subscribe to.",
			Configuration: map[string]*bookv1.Concept{
				param: concept(param, textType, "The "+what+" (required).", nil),
				"url": concept("url", textType, "The broker's URL; its credentials are kept sealed.", textDefault(defaultURL)),
			},
			FilterCapable: true, EventType: body,
		}
	}
	mk := func(name, display, short string, t *bookv1.Trigger) *Builtin {
		b := builtinBook(name, display, short, "A trigger book built into Prose: it has no procedures; its trigger starts automations (docs/triggers.md).",
			[]string{"trigger"}, nil)
		b.Version = TriggerBookVersion
		b.Triggers = []*bookv1.Trigger{t}
		return &Builtin{Book: b, Funcs: map[string]Func{}}
	}
	return []*Builtin{
		mk(WebhookBookName, "Webhooks", "Starts automations from signed HTTP deliveries.", webhook),
		mk(NATSBookName, "NATS", "Starts automations from the messages of a NATS subject.", message("subject", "subject", DefaultNATSURL)),
		mk(RabbitMQBookName, "RabbitMQ", "Starts automations from the messages of a RabbitMQ queue.", message("queue", "queue", DefaultRabbitMQURL)),
		mk(MQTTBookName, "MQTT", "Starts automations from the messages of an MQTT topic.", message("topic", "topic", DefaultMQTTURL)),
	}
}
