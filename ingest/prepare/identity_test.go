package prepare

import "testing"

func TestCanonicalProps(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b":1,"a" : [1,2 , {"y":true,"x":null}] } `, `{"a": [1, 2, {"x": null, "y": true}], "b": 1}`},
		{`{"aa":1,"b":2,"a":3}`, `{"a": 3, "b": 2, "aa": 1}`},
		{`{"a":1,"a":2}`, `{"a": 2}`},
		{`{"n":1.50,"m":1e2,"o":1.5e-3,"p":-0,"q":-0.00,"r":12E+1,"s":1.23e1,"t":0.0}`,
			`{"m": 100, "n": 1.50, "o": 0.0015, "p": 0, "q": 0.00, "r": 120, "s": 12.3, "t": 0.0}`},
		{`{"s":"a\u00e9\n\"\\\/\u001f\ud83d\ude00"}`, "{\"s\": \"a\u00e9\\n\\\"\\\\/\\u001f\U0001F600\"}"},
		{`{"é":"x","z":"y"}`, `{"z": "y", "é": "x"}`},
		{`{"owner":"Mikuláš Jäger 日本","b":"x"}`, `{"b": "x", "owner": "Mikuláš Jäger 日本"}`},
	} {
		got, err := CanonicalProps(nil, []byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("CanonicalProps(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{`, `{"a":}`, `{"a":01}`, `{"a":"\u0000"}`, `{"a":"\ud800"}`, `{"a":1}x`, `{"a":tru}`, "{\"a\":\"\xff\"}", "{\"a\":\"b\xc3\"}", "{\"a\":\"\x01\"}"} {
		if got, err := CanonicalProps(nil, []byte(bad)); err == nil {
			t.Errorf("CanonicalProps(%s) = %s, want an error", bad, got)
		}
	}
}

func TestMatchKey(t *testing.T) {
	for _, c := range []struct {
		props  string
		fields []string
		want   string
		ok     bool
	}{
		{`{"APN":" a-2 "}`, []string{"APN"}, `{A-2}`, true},
		{`{"APN":12.50}`, []string{"APN"}, `{12.5}`, true},
		{`{"APN":1e2,"S":"ca"}`, []string{"S", "APN"}, `{CA,100}`, true},
		{`{"APN":"a b"}`, []string{"APN"}, `{"A B"}`, true},
		{`{"APN":"null"}`, []string{"APN"}, `{"NULL"}`, true},
		{`{"APN":"x,\"y\\"}`, []string{"APN"}, `{"X,\"Y\\"}`, true},
		{`{"APN":"é"}`, []string{"APN"}, `{é}`, true},
		{`{"APN":"1","APN":"2"}`, []string{"APN"}, `{2}`, true},
		{`{"APN":"  "}`, []string{"APN"}, ``, false},
		{`{"APN":null}`, []string{"APN"}, ``, false},
		{`{"APN":true}`, []string{"APN"}, ``, false},
		{`{"APN":[1]}`, []string{"APN"}, ``, false},
		{`{"X":1}`, []string{"APN"}, ``, false},
		{`{"APN":1}`, nil, ``, false},
	} {
		got, ok := MatchKey(nil, []byte(c.props), c.fields)
		if ok != c.ok || string(got) != c.want {
			t.Errorf("MatchKey(%s, %v) = %q, %v; want %q, %v", c.props, c.fields, got, ok, c.want, c.ok)
		}
	}
}

// BenchmarkPropsHash: 7 fields, and the 21 of bench-write-gate.sh's
// typed case (in the order of its file, not jsonb's).
func BenchmarkPropsHash(b *testing.B) {
	for _, c := range []struct{ name, props string }{
		{"7", `{"parcel_id":"P-00012345","county":"06037","owner":"SMITH JOHN & JANE","land_use":"RES","year":1987,"value":412000.5,"zoning":"R-1"}`},
		{"21", `{"parcel_id":"BE-0000-0000-2","owner":"Mikuláš und Aleksandra Jäger","land_use":"R1","assessed_value":309439.25,"year":1920,"apn_code":"1","county":"06037","zoning":" Z-1 ","city":"City 1","street":"1 Main St","zip":"00001","units":1,"rooms":2,"owner_id":4000000001,"area_ft":501.01,"tax":1.0001,"vacant":true,"homestead":"Y","sold_on":"1951-02-02","updated":"2024-02-02T01:01:01Z","note":"n1"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			props := []byte(c.props)
			var scratch []byte
			b.SetBytes(int64(len(props)))
			for b.Loop() {
				_, scratch, _ = PropsHash(scratch, props)
			}
		})
	}
}

// TestCanonicalPropsRemembersOrder: one canonicaliser, which remembers
// the top object's key order from one object to the next, gives each of
// a run of objects (the same keys in the same order with other values,
// other orders, repeated and escaped keys, fewer and more keys, nested
// objects) the text a new one gives it.
func TestCanonicalPropsRemembersOrder(t *testing.T) {
	objs := []string{
		`{"b":1,"a":2,"cc":3}`,
		`{"b":"x","a":[1],"cc":{"z":1,"y":2}}`,
		`{"b":1,"a":2,"cc":3}`,
		`{"a":1,"b":2,"cc":3}`,
		`{"b":1,"a":2,"cc":3,"a":4}`,
		`{"b":1,"a":2,"cc":3,"a":5}`,
		`{"b":1,"a":2}`,
		`{"b":1,"a":2,"cc":3,"d":4}`,
		`{"b":1,"\u0061":2,"cc":3}`,
		`{"b":1,"\u0061":7,"cc":3}`,
		`{"b":1,"a":2,"cc":3}`,
		`{"é":1,"z":2,"b":{"b":1,"a":2}}`,
		`{"é":3,"z":4,"b":{"a":1,"b":2}}`,
		`{}`,
		`{"b":1,"a":2,"cc":3}`,
		`{"b":1,"a":`,
		`{"b":1,"a":2,"cc":3}`,
	}
	var c canon
	for n, o := range objs {
		got, gotErr := c.canonical(nil, []byte(o))
		want, wantErr := new(canon).canonical(nil, []byte(o))
		if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Errorf("object %d %s after %d others: %s, %v; a new canonicaliser gives %s, %v", n, o, n, got, gotErr, want, wantErr)
		}
	}
}
