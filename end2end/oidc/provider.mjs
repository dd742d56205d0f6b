// A real OpenID provider for the tests: the certified `oidc-provider` package from npm, with one
// confidential client, users whose ID tokens carry a roles claim, and an RSA signing key that
// can be rotated while it runs. Used in-process by tests/oidc.test.mjs; run alone it prints its
// issuer URL:
//
//   node end2end/oidc/provider.mjs [port] [redirect_uri]
//
// Its login page (oidc-provider's development interactions) takes any user name with any
// password; a user's claims come from `users` (unknown users get no roles).
import http from "node:http";
import { createHmac, createSign, createPrivateKey, generateKeyPairSync, randomUUID } from "node:crypto";
import Provider from "oidc-provider";

/** A fresh RSA key as a private JWK with this `kid`. */
export function newKey(kid = randomUUID()) {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
}

const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** A JWT with this header and these claims, signed RS256 by the private JWK `key` (HS256: by the
 * secret `key`; unsigned for `alg: none`). */
export function sign(header, claims, key) {
  const input = `${b64(header)}.${b64(claims)}`;
  if (header.alg === "none") return `${input}.`;
  if (header.alg === "HS256") return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
  const signer = createSign("RSA-SHA256");
  signer.update(input);
  return `${input}.${signer.sign(createPrivateKey({ key, format: "jwk" })).toString("base64url")}`;
}

/**
 * Starts the provider on 127.0.0.1:`port` (0: any free port).
 * `users`: login -> extra claims of that user's ID token (e.g. `{ inmanta_roles: {...} }`).
 * Returns `{ issuer, keys, rotate(), close() }`; `rotate()` puts a new signing key first (the
 * old one stays published, as providers do during a rotation) and returns it.
 */
export async function startProvider({
  port = 0,
  clientId = "inmanta",
  clientSecret = "inmanta-test-secret",
  redirectUris = [],
  postLogoutRedirectUris = [],
  users = {},
} = {}) {
  let handler = (_req, res) => { res.statusCode = 503; res.end(); };
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const keys = [newKey()];

  const configure = () => {
    const provider = new Provider(issuer, {
      clients: [{
        client_id: clientId,
        client_secret: clientSecret,
        client_name: "Inmanta",
        redirect_uris: redirectUris,
        post_logout_redirect_uris: postLogoutRedirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      }],
      jwks: { keys },
      cookies: { keys: ["oidc-test-cookie-key"] },
      claims: {
        openid: ["sub"],
        profile: ["preferred_username", "name", "inmanta_roles", "urn:inmanta:is_admin"],
        email: ["email"],
      },
      // The ID token carries the profile claims itself (the console reads no userinfo).
      conformIdTokenClaims: false,
      features: {
        devInteractions: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          async logoutSource(ctx, form) {
            ctx.body = `<!DOCTYPE html><title>Log out</title><h1>Log out of ${ctx.host}?</h1>${form}
              <button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
              <button type="submit" form="op.logoutForm">No, stay signed in</button>`;
          },
        },
      },
      pkce: { required: () => true },
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
      async findAccount(_ctx, id) {
        return {
          accountId: id,
          async claims() {
            return { sub: id, preferred_username: id, name: id, email: `${id}@example.com`, ...(users[id] ?? {}) };
          },
        };
      },
      // First-party client: consent is implied, as an organisation configures its own console.
      async loadExistingGrant(ctx) {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(" "));
        await grant.save();
        return grant;
      },
    });
    provider.on("server_error", (_ctx, err) => console.error("oidc-provider:", err));
    handler = provider.callback();
  };
  configure();

  return {
    issuer,
    keys,
    rotate() {
      keys.unshift(newKey());
      configure();
      return keys[0];
    },
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [port = "0", redirect = "http://127.0.0.1:8888/console/oidc/callback"] = process.argv.slice(2);
  const provider = await startProvider({
    port: Number(port),
    redirectUris: [redirect],
    postLogoutRedirectUris: [new URL("/console/login", redirect).toString()],
  });
  console.log(provider.issuer);
}
