/** Where the built-in example appears in messages (there is no file). */
export const EXAMPLE_CONFIG_NAME = '<built-in example>';

/**
 * The rules `sluice serve` uses when given no `--config`: a small, realistic domain that shows the
 * envoy ratelimit format and sluice's extensions. Printed at start so it can be copied and edited.
 */
export const EXAMPLE_CONFIG = `# sluice's built-in example rules, used by \`sluice serve\` when no --config is given.
# Save it to a file, edit it, and run: sluice serve --config rules.yaml
domain: example
descriptors:
  # Every client address: 10 requests per second with bursts of up to 20 (a token bucket).
  - key: remote_address
    rate_limit:
      name: per-ip
      unit: second
      requests_per_unit: 10
      algorithm: token-bucket
      burst: 20

  # Every API key: 100 per minute AND 10,000 per day (a request must pass both).
  - key: api_key
    rate_limits:
      - name: per-key-minute
        unit: minute
        requests_per_unit: 100
      - name: per-key-day
        unit: day
        requests_per_unit: 10000

  # A partner's key with no limit and no children: allow-listed, never limited.
  - key: api_key
    value: partner-key

  # Logins: 5 per minute per client address, counted exactly (a sliding log).
  - key: path
    value: /login
    descriptors:
      - key: remote_address
        rate_limit:
          name: login
          period: 1m
          requests_per_unit: 5
          algorithm: sliding-log

# How the gateway (sluice serve --upstream URL) turns an HTTP request into descriptors.
http:
  rate_limits:
    - actions:
        - remote_address: {}
    - actions:
        - request_headers:
            header_name: x-api-key
            descriptor_key: api_key
    - actions:
        - path:
            descriptor_key: path
        - remote_address: {}
`;
