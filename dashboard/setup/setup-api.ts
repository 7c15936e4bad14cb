/** The setup page's calls: the dashboard door's JSON routes on this origin. */

/** What a successful setup answers (the reports key is shown this once). */
export interface SetupDone {
  account_id: string;
  owner_user_id: string;
  site_id: string;
  time_zone: string;
  reports_key_id: string;
  reports_key: string;
}

/** The form's fields, as the service names them. */
export interface SetupForm {
  owner_email: string;
  account_name: string;
  hostnames: string[];
  time_zone: string;
}

/** A refusal: the service's own message. */
export class SetupRefused extends Error {}

async function post(path: string, body: object): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    throw new SetupRefused("The service could not be reached. Try again in a moment.");
  }
  if (res.status === 204) return undefined;
  const answer = (await res.json().catch(() => undefined)) as
    | { ok: true; data: unknown }
    | { ok: false; error: { message: string } }
    | undefined;
  if (!answer) throw new SetupRefused(`The service answered ${res.status}.`);
  if (!answer.ok) throw new SetupRefused(answer.error.message);
  return answer.data;
}

/** Resolves when `token` would be accepted; rejects with the service's refusal. */
export async function checkToken(token: string): Promise<void> {
  await post("/dashboard/setup/check", { token });
}

/** Spends `token`: the account, site and reports key. */
export async function completeSetup(token: string, form: SetupForm): Promise<SetupDone> {
  return (await post("/dashboard/setup", { token, ...form })) as SetupDone;
}
