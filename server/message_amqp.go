package server

import (
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/store"
)

// amqpPrefetch is the messages one replica's consumer holds delivered and
// not yet acknowledged (basic.qos): the rest of a burst waits in the queue.
const amqpPrefetch = 16

// subscribeRabbitMQ consumes a queue (declared durable) with manual acks:
// a message is acknowledged once its runs are committed, and one whose
// runs could not be started is handed back (nack, requeue) after a second.
// The deliveries held when the connection goes (the replica dies, the
// broker restarts) are requeued by the broker. The subscription is lost
// when the connection or the channel closes or the broker cancels the
// consumer (the queue was deleted).
func (m *MessageTriggers) subscribeRabbitMQ(inst store.TriggerInstance, cfg map[string]string) (*brokerSub, error) {
	conn, err := amqp.DialConfig(cfg["url"], m.amqpConfig())
	if err != nil {
		return nil, err
	}
	queue := cfg["queue"]
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(queue, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.Qos(amqpPrefetch, 0, false)
	}
	var deliveries <-chan amqp.Delivery
	if err == nil {
		deliveries, err = ch.Consume(queue, "prose-"+inst.ID+"-"+store.NewID(), false, false, false, false, nil)
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	b := newBrokerSub()
	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
	cancelled := ch.NotifyCancel(make(chan string, 1))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case e := <-connClosed:
				b.fail(amqpLost("the connection closed", e))
				return
			case e := <-chClosed:
				b.fail(amqpLost("the channel closed", e))
				return
			case <-cancelled:
				b.fail(errors.New("the broker cancelled the consumer (the queue was deleted?)"))
				return
			case d, ok := <-deliveries:
				if !ok {
					b.fail(errors.New("the deliveries ended"))
					return
				}
				id := d.MessageId
				if id == "" || len(id) > 64 {
					id = payloadID([]byte(queue), d.Body)
				}
				if m.handle(inst, id, d.Body) {
					select { // not at once: what failed may need a moment
					case <-stop:
					case <-time.After(time.Second):
					}
					_ = d.Nack(false, true) // redelivered later: the same run if it was started
					continue
				}
				_ = d.Ack(false) // lost: redelivered, and its runs are found by request id
			}
		}
	}()
	b.close = func(bool) {
		close(stop)
		<-done
		_ = conn.Close() // the deliveries not acknowledged are requeued
	}
	return b, nil
}

func amqpLost(what string, e *amqp.Error) error {
	if e == nil {
		return errors.New(what)
	}
	return errors.New(what + ": " + e.Error())
}
