// The authorization server the OAuth integration test talks to: oauth2-mock-server (pinned by
// package-lock.json beside this file) on 127.0.0.1, port chosen by the system, with an RS256
// and an ES256 signing key. It approves every authorization request at once (no login page: a
// browser-less flow), and binds what it issues the way a real server does: the access token of
// an authorization-code grant names the `resource` the client asked for (RFC 8707) as its
// audience, carries the scopes asked for at /authorize, and says which client it was issued to.
//
//   node as.mjs <node_modules dir>
//
// Prints `ISSUER=<url>` once it listens and runs until its stdin closes. Test-only routes:
//   POST /test/token   {"kid"?, "expires_in"?, "claims": {...}, "drop": [names]}: a token signed
//                      with one of the published keys, its claims set or removed as asked
//   POST /test/rotate  publishes a new RS256 key and answers {"kid": ...}
//   GET  /test/stats   {"jwks": <how many times the JWKS was fetched>}

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.argv[2];
if (!modules) {
    console.error('usage: node as.mjs <node_modules dir>');
    process.exit(2);
}
const lib = await import(pathToFileURL(join(modules, 'oauth2-mock-server', 'dist', 'index.mjs')).href);
const { OAuth2Server, Events } = lib;

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256', { kid: 'rs-1' });
await server.issuer.keys.generate('ES256', { kid: 'es-1' });

// What each authorization code was issued for, until it is exchanged.
const grants = new Map();
let jwksFetches = 0;

server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
    const code = redirect.url.searchParams.get('code');
    if (code) {
        grants.set(code, { scope: req.query.scope, resource: req.query.resource, client: req.query.client_id });
    }
});

server.service.on(Events.BeforeTokenSigning, (token, req) => {
    const body = req.body ?? {};
    if (body.grant_type !== 'authorization_code' || !token.payload.amr) {
        return;
    }
    const grant = grants.get(body.code) ?? {};
    const resource = body.resource ?? grant.resource;
    if (resource) {
        token.payload.aud = resource;
    }
    token.payload.scope = grant.scope ?? body.scope ?? '';
    token.payload.client_id = body.client_id ?? grant.client;
});

server.service.on(Events.BeforeResponse, (response, req) => {
    const body = req.body ?? {};
    if (body.grant_type === 'authorization_code') {
        const grant = grants.get(body.code) ?? {};
        response.body.scope = grant.scope ?? response.body.scope;
        grants.delete(body.code);
    }
});

// Counted by wrapping the JWKS route's handler.
const handler = server.service.requestHandler;
const counting = (req, res) => {
    if (req.method === 'GET' && req.url.split('?')[0] === '/jwks') {
        jwksFetches += 1;
    }
    return handler(req, res);
};

server.service.addRoute('POST', '/test/token', async (req, res) => {
    const ask = req.body ?? {};
    const claims = ask.claims ?? {};
    const drop = ask.drop ?? [];
    const token = await server.issuer.buildToken({
        kid: ask.kid,
        expiresIn: ask.expires_in ?? 600,
        scopesOrTransform: (_header, payload) => {
            Object.assign(payload, claims);
            for (const name of drop) {
                delete payload[name];
            }
        },
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: token }));
});

server.service.addRoute('POST', '/test/rotate', async (_req, res) => {
    const kid = `rs-${Date.now()}`;
    await server.issuer.keys.generate('RS256', { kid });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kid }));
});

server.service.addRoute('GET', '/test/stats', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jwks: jwksFetches }));
});

// The library's server, listening through the counting handler.
const http = await import('node:http');
const listener = http.createServer(counting);
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const { port } = listener.address();
server.issuer.url = `http://127.0.0.1:${port}`;
process.stdout.write(`ISSUER=${server.issuer.url}\n`);

process.stdin.resume();
process.stdin.on('end', () => {
    listener.close();
    process.exit(0);
});
