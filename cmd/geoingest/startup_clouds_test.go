package main

import (
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestStartupChecksClouds: serve on a pubsub:// subscription, an azqueue://
// queue or a route bucket that does not exist exits at once with a message
// naming it and the flag to check; malformed URLs are refused.
func TestStartupChecksClouds(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	g := testsrv.GCP(t)
	az := testsrv.Azurite(t)
	topic := g.NewTopic(t, "startup")
	sub := g.NewSubscription(t, topic, 10*time.Second, "")
	azEnv := map[string]string{"AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString}
	q := az.NewQueue(t, "startup")
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--queue-url", "pubsub://projects/" + testsrv.GCPProject + "/subscriptions/nope"}, "does not exist"},
		{nil, []string{"--queue-url", "pubsub://" + sub, "--dlq-url", "pubsub://projects/" + testsrv.GCPProject + "/topics/nope"}, "does not exist"},
		{nil, []string{"--queue-url", "pubsub://" + sub, "--route", "nobucket:parcels/=parcels"}, "gs://nobucket: the bucket does not exist"},
		{nil, []string{"--queue-url", "pubsub://projects/p"}, "pubsub://projects/PROJECT/subscriptions/SUBSCRIPTION"},
		{azEnv, []string{"--queue-url", "azqueue://" + testsrv.AzureAccount + "/nope"}, "the queue does not exist"},
		{azEnv, []string{"--queue-url", "azqueue://" + testsrv.AzureAccount + "/" + queueName(q), "--route", "nocontainer:parcels/=parcels"}, "container nocontainer"},
		{azEnv, []string{"--queue-url", "azqueue://" + testsrv.AzureAccount + "/" + queueName(q), "--dlq-url", "azqueue://other/dlq"}, "the account of --queue-url"},
		{azEnv, []string{"--queue-url", "azqueue://only-account"}, "azqueue://ACCOUNT/QUEUE"},
	} {
		env := map[string]string{"DATABASE_URL": db}
		for k, v := range c.env {
			env[k] = v
		}
		start := time.Now()
		code, out, errOut := run(t, env, append([]string{"serve", "--metrics-addr", "", "--start-timeout", "20s"}, c.args...)...)
		require.NotEqual(t, 0, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.want, "%v", c.args)
		require.Less(t, time.Since(start), 15*time.Second, "a refusal exits at once, not after the start-up timeout: %v", c.args)
	}
}
