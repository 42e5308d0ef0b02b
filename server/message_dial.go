package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/internal/netguard"
)

// brokerConnectTimeout bounds a broker's connection and its TLS or
// WebSocket handshake.
const brokerConnectTimeout = 10 * time.Second

// AllowPrivateNetworks lets the message triggers' brokers be on addresses
// that are not public (netguard); off, as by default, a broker URL a tenant
// gives on loopback, a private network or a link-local address (the
// default URLs are on loopback too) is refused when dialled, and the
// instance's status says so. Call it before Run.
func (m *MessageTriggers) AllowPrivateNetworks(on bool) { m.allowPrivate = on }

// dial is how every broker connection is made: netguard's dialer, whose
// errors a tenant may read. The clients' own dialers (and their proxies
// from the environment) are never used.
func (m *MessageTriggers) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerConnectTimeout)
	defer cancel()
	return netguard.DialFunc(!m.allowPrivate, time.Time{})(ctx, network, addr)
}

// natsDialer is m.dial as a nats.CustomDialer (nats does TLS on top).
type natsDialer struct{ m *MessageTriggers }

func (d natsDialer) Dial(network, address string) (net.Conn, error) {
	return d.m.dial(context.Background(), network, address)
}

func (m *MessageTriggers) natsOptions() nats.Option { return nats.SetCustomDialer(natsDialer{m}) }

// amqpConfig is amqp.Dial's configuration with m.dial: like
// amqp.DefaultDial, the handshake gets a deadline that the client clears
// once the connection is open (amqps does TLS on top).
func (m *MessageTriggers) amqpConfig() amqp.Config {
	return amqp.Config{Heartbeat: 10 * time.Second, Locale: "en_US", Dial: func(network, addr string) (net.Conn, error) {
		c, err := m.dial(context.Background(), network, addr)
		if err != nil {
			return nil, err
		}
		if err := c.SetDeadline(time.Now().Add(brokerConnectTimeout)); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}}
}

// mqttOpen opens an MQTT broker's connection with m.dial for every scheme
// the trigger accepts: paho's own opener dials WebSockets and proxies
// without the dialer it is given.
func (m *MessageTriggers) mqttOpen(uri *url.URL, o mqtt.ClientOptions) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), brokerConnectTimeout)
	defer cancel()
	tlsConfig := func() *tls.Config {
		c := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLSConfig != nil {
			c = o.TLSConfig.Clone()
		}
		if c.ServerName == "" {
			c.ServerName = uri.Hostname()
		}
		return c
	}
	switch uri.Scheme {
	case "ws", "wss":
		d := websocket.Dialer{NetDialContext: m.dial, TLSClientConfig: tlsConfig(), Subprotocols: []string{"mqtt"}, HandshakeTimeout: brokerConnectTimeout}
		u := *uri
		u.User = nil
		ws, resp, err := d.DialContext(ctx, u.String(), o.HTTPHeaders)
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if err != nil {
			return nil, err
		}
		return &wsConn{Conn: ws}, nil
	case "ssl", "mqtts":
		c, err := m.dial(ctx, "tcp", uri.Host)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		return tc, nil
	default: // tcp, mqtt
		return m.dial(ctx, "tcp", uri.Host)
	}
}

// wsConn is a WebSocket as the byte stream MQTT runs on (as paho's own
// wrapper: each write a binary message, reads across messages).
type wsConn struct {
	*websocket.Conn
	r   io.Reader
	rmu sync.Mutex
	wmu sync.Mutex
}

func (c *wsConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.r == nil {
			_, r, err := c.NextReader()
			if err != nil {
				return 0, err
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			c.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}
