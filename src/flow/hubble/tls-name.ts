/**
 * Cilium's TLSServerName (pkg/hubble/peer/serviceoption): each agent's name for TLS,
 * `<node>.<cluster>.hubble-grpc.cilium.io` (dots in either become hyphens). The Hubble server's Peer
 * service sends it (src/server/hubble), and `kubectl retina why` verifies it (src/why).
 */
export function tlsServerName(nodeName: string, clusterName: string): string {
  if (nodeName === '') return '';
  return [nodeName.replaceAll('.', '-'), (clusterName || 'default').replaceAll('.', '-'), 'hubble-grpc', 'cilium.io'].join('.');
}
