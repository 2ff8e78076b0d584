// A TCP proxy of the tests' own between a hub and PostgreSQL, to fail the
// network rather than the processes at its ends:
//
//   stall()  every connection stops carrying bytes (both ways), and is kept
//            open: to its ends the peer has gone silent, as when a route is
//            lost; connections made meanwhile are held too;
//   cut()    every connection is closed at once, both ends (its sockets
//            destroyed; not a reset: resetAndDestroy() left Node 20 spinning);
//   heal()   bytes flow again; new connections pass.
//
// A stalled then cut connection is the hub's database sitting behind a
// network partition that ends with the connection dropped (a firewall's or
// NAT's idle timeout).
import net from "node:net";

export class TcpProxy {
  // Listens on a free loopback port; `targetPort`: where bytes go (127.0.0.1).
  static async start(targetPort) {
    const proxy = new TcpProxy(targetPort);
    await new Promise((resolve, reject) => {
      proxy.server.once("error", reject);
      proxy.server.listen(0, "127.0.0.1", resolve);
    });
    proxy.port = proxy.server.address().port;
    return proxy;
  }

  constructor(targetPort) {
    this.targetPort = targetPort;
    this.stalled = false;
    this.pairs = new Set();
    this.connections = 0;
    this.server = net.createServer((client) => this.accept(client));
  }

  accept(client) {
    this.connections++;
    const upstream = net.connect(this.targetPort, "127.0.0.1");
    const pair = { client, upstream, held: [] };
    this.pairs.add(pair);
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    for (const socket of [client, upstream]) {
      socket.on("error", close);
      socket.on("close", close);
    }
    client.on("data", (bytes) => this.carry(pair, upstream, bytes));
    upstream.on("data", (bytes) => this.carry(pair, client, bytes));
  }

  // Stalled, the bytes are kept (neither end sees them; both keep writing
  // as into a network that has gone silent), and delivered on heal().
  carry(pair, to, bytes) {
    if (this.stalled) pair.held.push({ to, bytes });
    else to.write(bytes);
  }

  stall() {
    this.stalled = true;
  }

  cut() {
    for (const { client, upstream } of [...this.pairs]) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  heal() {
    this.stalled = false;
    for (const pair of this.pairs) {
      for (const { to, bytes } of pair.held) to.write(bytes);
      pair.held = [];
    }
  }

  close() {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
