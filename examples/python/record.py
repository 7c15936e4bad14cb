"""Records a payment and a batch of events with requests.

    pip install requests
    INGEST_KEY=mk_live_... INGEST_SITE=site_... python3 examples/python/record.py

Optional: INGEST_URL (default http://127.0.0.1:8080), INGEST_HOST (a hostname of
the site, default example.com), INGEST_PAYMENT_ID (default pay_example_<time>).
Retries 5xx and network errors (waiting Retry-After, else exponential backoff),
stops on 429, never retries other 4xx. Exit codes: 0 done, 2 refused (4xx),
3 over quota, 4 gave up.
"""

import os
import random
import sys
import time
from datetime import datetime, timezone

import requests

BASE = os.environ.get("INGEST_URL", "http://127.0.0.1:8080")
KEY = os.environ.get("INGEST_KEY")
SITE = os.environ.get("INGEST_SITE")
if not KEY or not SITE:
    print("set INGEST_KEY and INGEST_SITE", file=sys.stderr)
    sys.exit(2)  # a usage error, as in the Node and curl examples
HOST = os.environ.get("INGEST_HOST", "example.com")
MAX_ATTEMPTS = 5


class Stop(Exception):
    def __init__(self, message, exit_code):
        super().__init__(message)
        self.exit_code = exit_code


def delay(attempt, retry_after):
    """Retry-After when the server gave one, else 0.5 s x 2^n with jitter."""
    if retry_after is not None and retry_after.isdigit():
        return int(retry_after)
    return min(30, 0.5 * 2**attempt) * random.uniform(0.5, 1)


def post(session, path, body):
    """POSTs JSON; retries what may succeed later and raises Stop for what will not."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            res = session.post(BASE + path, json=body, timeout=10)
        except requests.RequestException as err:
            if attempt + 1 == MAX_ATTEMPTS:
                raise Stop(f"gave up: {err}", 4) from err
            time.sleep(delay(attempt, None))
            continue
        if res.ok:
            return res
        try:
            error = res.json()["error"]
        except ValueError:
            error = {"code": "?", "message": res.reason}
        reason = f"{res.status_code} {error['code']}: {error['message']}"
        if res.status_code == 429:
            # Over the monthly quota: retrying before Retry-After is refused anyway.
            raise Stop(f"{reason}; retry after {res.headers.get('Retry-After')} s", 3)
        if res.status_code < 500:
            raise Stop(reason, 2)
        if attempt + 1 == MAX_ATTEMPTS:
            raise Stop(f"gave up: {reason}", 4)
        print(f"{reason}; retrying", file=sys.stderr)
        time.sleep(delay(attempt, res.headers.get("Retry-After")))
    raise Stop("gave up", 4)


def main():
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {KEY}"
    # The payment id is the idempotency key: a retry updates, never duplicates.
    payment_id = os.environ.get("INGEST_PAYMENT_ID", f"pay_example_{int(time.time())}")
    visitor = {
        "ip": "203.0.113.9",
        "ua": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) Version/17.0 Safari/605.1.15",
    }
    try:
        # Test data: this records a real 29.99 USD charge into the site INGEST_SITE points at (its
        # revenue counts it); metadata test=true and the pay_example_ id mark it as an example's.
        res = post(
            session,
            "/api/v1/payments",
            {
                "payment_id": payment_id,
                "customer": {"id": "cus_42", "email": "ada@example.com", "user_id": "u_42"},
                "amount": 29.99,
                "currency": "USD",
                "kind": "charge",
                "paid_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "metadata": {"test": "true"},
            },
        )
        print(f"payment {res.json()['data']['payment_id']} recorded")
        res = post(
            session,
            "/api/v1/events",
            {
                "s": SITE,
                "b": [
                    {"e": "pageview", "u": f"https://{HOST}/pricing?utm_source=newsletter", **visitor},
                    {"e": "signup", "u": f"https://{HOST}/welcome", "p": {"plan": "pro"}, **visitor},
                    {"e": "$identify", "u": f"https://{HOST}/welcome", "uid": "u_42", **visitor},
                ],
            },
        )
        print(f"3 events recorded; quota remaining {res.headers.get('X-Quota-Remaining')}")
    except Stop as stop:
        print(stop, file=sys.stderr)
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main()
