// The Identity section of the Card pane: the security schemes the card declares, and a form to
// pick one. For an OAuth 2.0 client-credentials or OpenID Connect scheme the page sends a client
// id and secret to the inspector, whose own client gets the token; for an API-key scheme, the
// key. The secret, the key and the token stay in the inspector: the page only learns which
// scheme is used and whether a token was obtained. The secret fields are emptied once sent.

import { api } from "./api.js";
import { $, clear, clock, el, errorText } from "./view.js";

const KINDS = {
  oauth2: "OAuth 2.0 client credentials",
  openIdConnect: "OpenID Connect (client credentials)",
  apiKey: "API key",
  http: "HTTP authentication",
  mtls: "mutual TLS",
  unknown: "unknown",
  "command line": "the command line's credential",
};

function describe(scheme) {
  if (scheme.kind === "oauth2") return `token ${scheme.tokenUrl || "(no client-credentials flow)"}${scheme.scopes && scheme.scopes.length ? `, scopes ${scheme.scopes.join(" ")}` : ""}`;
  if (scheme.kind === "openIdConnect") return `discovery ${scheme.discoveryUrl}`;
  if (scheme.kind === "apiKey") return `${scheme.location} ${scheme.keyName}`;
  if (scheme.kind === "http") return `${scheme.scheme} (give it with --token)`;
  return "";
}

export function identityText(identity) {
  if (!identity) return "";
  if (!identity.scheme) return identity.credential ? "credential: command line" : "credential: none";
  const outcome = identity.token === "failed" ? "no token" : identity.token === "set" ? "key set" : "token obtained";
  return `credential: ${identity.scheme} (${outcome})`;
}

function statusView(identity) {
  if (!identity) return null;
  if (!identity.scheme) {
    return el("span", { text: identity.credential ? "Using the command line's credential." : "No credential (none given on the command line)." });
  }
  const who = identity.clientId ? `, client ${identity.clientId} (${identity.authMethod})` : "";
  const head = `Using scheme ${identity.scheme}: ${KINDS[identity.kind] || identity.kind}${who}. `;
  if (identity.token === "failed") {
    return el("span", {}, head, el("span", { class: "error", text: `No token: ${identity.error}` }));
  }
  const what = identity.token === "set" ? "API key set" : "Token obtained";
  return el("span", {}, head, el("span", { class: "yes", text: `${what} at ${clock(identity.obtainedAt)}` }), " (kept by the inspector, never shown).");
}

function fieldsFor(scheme) {
  if (!scheme) return [];
  if (scheme.kind === "apiKey") {
    return [el("label", {}, "API key ", el("input", { id: "identity-key", type: "password", autocomplete: "off", size: 28 }))];
  }
  return [
    el("label", {}, "Client id ", el("input", { id: "identity-client", autocomplete: "off", size: 18 })),
    el("label", {}, "Client secret ", el("input", { id: "identity-secret", type: "password", autocomplete: "off", size: 22 })),
    el("label", {}, "Token endpoint auth ",
      el("select", { id: "identity-method" },
        el("option", { value: "client_secret_basic", text: "client_secret_basic" }),
        el("option", { value: "client_secret_post", text: "client_secret_post" }))),
  ];
}

export function identityView(view) {
  const schemes = view.schemes || [];
  const box = el("div", { id: "identity" });
  const status = el("p", { id: "identity-status" }, statusView(view.identity));
  const show = (identity) => {
    clear(status, statusView(identity));
    $("#credential").textContent = identityText(identity);
  };
  if (!view.interface) return box;
  const table = schemes.length
    ? el("table", { class: "grid schemes" }, el("tr", {}, ["scheme", "kind", "what", "the inspector can use it"].map((h) => el("th", { text: h }))),
      schemes.map((s) => el("tr", {},
        el("td", {}, el("code", { text: s.name })), el("td", { text: KINDS[s.kind] || s.kind }),
        el("td", { text: describe(s) }), el("td", { class: s.usable ? "yes" : "no", text: s.usable ? "yes" : "no" }))))
    : el("p", { class: "muted", text: "The card declares no security scheme." });
  const select = el("select", { id: "identity-scheme" },
    el("option", { value: "", text: "the command line's credential" }),
    schemes.filter((s) => s.usable).map((s) => el("option", { value: s.name, text: `${s.name} (${KINDS[s.kind]})` })));
  const fields = el("span", { class: "row-controls" });
  const problem = el("span", { id: "identity-problem", class: "error" });
  select.addEventListener("change", () => clear(fields, fieldsFor(schemes.find((s) => s.name === select.value))));
  const form = el("form", { id: "identity-form", class: "row-controls", autocomplete: "off" },
    el("label", {}, "Present ", select), fields, el("button", { id: "identity-use", type: "submit", text: "Use" }), problem);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.textContent = "";
    const body = { scheme: select.value };
    const value = (id) => { const input = $(id, form); return input ? input.value : undefined; };
    if (value("#identity-key") !== undefined) body.apiKey = value("#identity-key");
    if (value("#identity-client") !== undefined) {
      Object.assign(body, { clientId: value("#identity-client"), clientSecret: value("#identity-secret"), authMethod: value("#identity-method") });
    }
    for (const input of form.querySelectorAll("input[type=password]")) input.value = "";
    const answer = await api("identity", body);
    if (answer.error) problem.textContent = errorText(answer.error);
    else show(answer.identity);
  });
  box.append(el("h3", { text: "Identity" }), table, form, status);
  return box;
}
