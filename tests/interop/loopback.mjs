// Preload for conformance.sh (`node --import ./loopback.mjs supergateway ...`).
//
// supergateway has no option for the address it listens on: it calls app.listen(port), which
// binds every interface. This module makes every net/http server in the process listen on
// 127.0.0.1 only, whatever host (if any) the caller passed. With LOOPBACK_PORT_FILE set it also
// writes "ADDRESS PORT" to that file once the server is listening, so the caller can pass
// --port 0 (the kernel picks a free port) and read back the port actually bound.

import fs from 'node:fs';
import net from 'node:net';

const portFile = process.env.LOOPBACK_PORT_FILE;
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const first = args[0];
  if (first !== null && typeof first === 'object') {
    // listen(options[, callback]); a pipe path (options.path) is left alone.
    if (first.path === undefined) args[0] = { ...first, host: '127.0.0.1' };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === 'string') args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  } else if (first === undefined || typeof first === 'function') {
    // listen([callback]): a random port on every interface; make it loopback.
    args.unshift(0, '127.0.0.1');
  }
  this.once('listening', () => {
    const addr = this.address();
    if (portFile && addr && typeof addr === 'object') fs.writeFileSync(portFile, `${addr.address} ${addr.port}\n`);
  });
  return listen.apply(this, args);
};
