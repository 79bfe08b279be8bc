// common.js comes before each check script (node_test.go's runNode
// joins them): what both scripts use.

// check prints "ok name" when cond holds, else fails the script with
// what it got.
function check(name, cond, got) {
  if (!cond) {
    throw new Error(`FAIL ${name}: got ${typeof got === 'string' ? JSON.stringify(got) : JSON.stringify(got, null, 1)}`);
  }
  console.log('ok', name);
}

// collect reads a stream to its end.
function collect(stream) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    stream.on('data', (c) => chunks.push(Buffer.from(c)));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

// untar reads a tar into {name: Buffer}; a directory's name ends with /.
function untar(buf) {
  const files = {};
  let off = 0;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString().replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(h[156]);
    off += 512;
    files[name + (type === '5' ? '/' : '')] = buf.subarray(off, off + size);
    off += Math.ceil(size / 512) * 512;
  }
  return files;
}

// httpGet fetches http://host:port/p: {status, body}.
function httpGet(host, port, p) {
  return new Promise((resolve, reject) => {
    require('http').get({ host, port, path: p }, (res) => {
      collect(res).then((b) => resolve({ status: res.statusCode, body: b.toString() }), reject);
    }).on('error', reject);
  });
}
