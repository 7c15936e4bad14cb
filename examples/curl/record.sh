#!/usr/bin/env bash
# Records a payment and a batch of events with curl.
#
#   INGEST_KEY=mk_live_… INGEST_SITE=site_… bash examples/curl/record.sh
#
# Optional: INGEST_URL (default http://127.0.0.1:8080), INGEST_HOST (a hostname of the site,
# default example.com), INGEST_PAYMENT_ID (default pay_example_<time>).
# Retries 5xx and network errors (waiting Retry-After, else exponential backoff), stops on 429,
# never retries other 4xx. Exit codes: 0 done, 2 refused (4xx), 3 over quota, 4 gave up.
set -uo pipefail

BASE="${INGEST_URL:-http://127.0.0.1:8080}"
KEY="${INGEST_KEY:?set INGEST_KEY}"
SITE="${INGEST_SITE:?set INGEST_SITE}"
HOST="${INGEST_HOST:-example.com}"
PAYMENT_ID="${INGEST_PAYMENT_ID:-pay_example_$(date +%s)}"
MAX_ATTEMPTS=5

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# post PATH JSON: sets STATUS, leaves the body in $work/body and headers in $work/headers.
post() {
  local attempt=0 wait
  while :; do
    STATUS="$(curl -sS -o "$work/body" -D "$work/headers" -w '%{http_code}' --max-time 10 \
      -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
      --data-binary "$2" "$BASE$1")" || STATUS=000
    case "$STATUS" in
      2??) return 0 ;;
      429)
        echo "429 $(reason); retry after $(header retry-after) s" >&2
        exit 3 ;;
      000 | 5??) ;;
      *)
        echo "$STATUS $(reason)" >&2
        exit 2 ;;
    esac
    attempt=$((attempt + 1))
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      echo "gave up after $attempt attempts: $STATUS $(reason)" >&2
      exit 4
    fi
    wait="$(header retry-after)"
    # Without Retry-After: 1, 2, 4, 8 s.
    [[ "$wait" =~ ^[0-9]+$ ]] || wait=$((1 << (attempt - 1)))
    echo "$STATUS $(reason); retrying in ${wait}s" >&2
    sleep "$wait"
  done
}

# reason: "<code>: <message>" from the error envelope in the body (no jq needed).
reason() {
  sed -n 's/.*"code":"\([^"]*\)","message":"\(\([^"\\]\|\\.\)*\)".*/\1: \2/p' "$work/body" 2>/dev/null
}

# header NAME: a response header's value (case-insensitive), empty when absent.
header() {
  tr -d '\r' <"$work/headers" 2>/dev/null | awk -v name="$1" -F': ' 'tolower($1) == name { print $2 }' | tail -1
}

VISITOR='"ip":"203.0.113.9","ua":"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"'
NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

# The payment id is the idempotency key: a retry updates, never duplicates.
# Test data: this records a real 29.99 USD charge into the site INGEST_SITE points at (its revenue
# counts it); metadata test=true and the pay_example_ id mark it as an example's.
post /api/v1/payments '{"payment_id":"'"$PAYMENT_ID"'","customer":{"id":"cus_42","email":"ada@example.com","user_id":"u_42"},"amount":29.99,"currency":"USD","kind":"charge","paid_at":"'"$NOW"'","metadata":{"test":"true"}}'
echo "payment $PAYMENT_ID recorded"

post /api/v1/events '{"s":"'"$SITE"'","b":[
  {"e":"pageview","u":"https://'"$HOST"'/pricing?utm_source=newsletter",'"$VISITOR"'},
  {"e":"signup","u":"https://'"$HOST"'/welcome","p":{"plan":"pro"},'"$VISITOR"'},
  {"e":"$identify","u":"https://'"$HOST"'/welcome","uid":"u_42",'"$VISITOR"'}]}'
echo "3 events recorded; quota remaining $(header x-quota-remaining)"
