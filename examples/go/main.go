// Records a payment and a batch of events with net/http (standard library only).
//
//	INGEST_KEY=mk_live_… INGEST_SITE=site_… go run ./examples/go
//
// Optional: INGEST_URL (default http://127.0.0.1:8080), INGEST_HOST (a hostname of the site,
// default example.com), INGEST_PAYMENT_ID (default pay_example_<time>).
// Retries 5xx and network errors (waiting Retry-After, else exponential backoff), stops on 429,
// never retries other 4xx. Exit codes: 0 done, 2 refused (4xx), 3 over quota, 4 gave up.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"strconv"
	"time"
)

const maxAttempts = 5

type stop struct {
	msg  string
	code int
}

func (s *stop) Error() string { return s.msg }

type envelope struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Data struct {
		PaymentID string `json:"payment_id"`
	} `json:"data"`
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	if fallback == "" {
		fmt.Fprintf(os.Stderr, "set %s\n", name)
		os.Exit(2)
	}
	return fallback
}

// delay is Retry-After when the server gave one, else 0.5 s × 2^n with jitter.
func delay(attempt int, retryAfter string) time.Duration {
	if s, err := strconv.Atoi(retryAfter); err == nil {
		return time.Duration(s) * time.Second
	}
	d := time.Duration(500*(1<<attempt)) * time.Millisecond
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)))
}

// post sends JSON, retrying what may succeed later; it returns a *stop for what will not.
func post(client *http.Client, base, key, path string, body any) (*http.Response, *envelope, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(payload))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			if attempt+1 >= maxAttempts {
				return nil, nil, &stop{"gave up: " + err.Error(), 4}
			}
			time.Sleep(delay(attempt, ""))
			continue
		}
		var env envelope
		_ = json.NewDecoder(res.Body).Decode(&env)
		res.Body.Close()
		if res.StatusCode < 300 {
			return res, &env, nil
		}
		reason := fmt.Sprintf("%d %s: %s", res.StatusCode, env.Error.Code, env.Error.Message)
		switch {
		case res.StatusCode == http.StatusTooManyRequests:
			// Over the monthly quota: retrying before Retry-After is refused anyway.
			return nil, nil, &stop{reason + "; retry after " + res.Header.Get("Retry-After") + " s", 3}
		case res.StatusCode < 500:
			return nil, nil, &stop{reason, 2}
		case attempt+1 >= maxAttempts:
			return nil, nil, &stop{"gave up: " + reason, 4}
		}
		fmt.Fprintln(os.Stderr, reason+"; retrying")
		time.Sleep(delay(attempt, res.Header.Get("Retry-After")))
	}
}

func main() {
	base := env("INGEST_URL", "http://127.0.0.1:8080")
	key := env("INGEST_KEY", "")
	site := env("INGEST_SITE", "")
	host := env("INGEST_HOST", "example.com")
	// The payment id is the idempotency key: a retry updates, never duplicates.
	paymentID := env("INGEST_PAYMENT_ID", fmt.Sprintf("pay_example_%d", time.Now().Unix()))
	client := &http.Client{Timeout: 10 * time.Second}
	ip, ua := "203.0.113.9", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"

	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		if s, ok := err.(*stop); ok {
			os.Exit(s.code)
		}
		os.Exit(1)
	}

	// Test data: this records a real 29.99 USD charge into the site INGEST_SITE points at (its
	// revenue counts it); metadata test=true and the pay_example_ id mark it as an example's.
	_, payment, err := post(client, base, key, "/api/v1/payments", map[string]any{
		"payment_id": paymentID,
		"customer":   map[string]any{"id": "cus_42", "email": "ada@example.com", "user_id": "u_42"},
		"amount":     29.99,
		"currency":   "USD",
		"kind":       "charge",
		"paid_at":    time.Now().UTC().Format(time.RFC3339),
		"metadata":   map[string]string{"test": "true"},
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("payment %s recorded\n", payment.Data.PaymentID)

	res, _, err := post(client, base, key, "/api/v1/events", map[string]any{
		"s": site,
		"b": []map[string]any{
			{"e": "pageview", "u": "https://" + host + "/pricing?utm_source=newsletter", "ip": ip, "ua": ua},
			{"e": "signup", "u": "https://" + host + "/welcome", "p": map[string]any{"plan": "pro"}, "ip": ip, "ua": ua},
			{"e": "$identify", "u": "https://" + host + "/welcome", "uid": "u_42", "ip": ip, "ua": ua},
		},
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("3 events recorded; quota remaining %s\n", res.Header.Get("X-Quota-Remaining"))
}
