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
