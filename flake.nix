{
  description = "svc: self-hosted machine service";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      # The single executable (docs/install.md): the dependencies from package-lock.json (no extra
      # hash to keep), better-sqlite3 built against this node, the bundle injected into it.
      packages = forAll (pkgs: {
        default = pkgs.buildNpmPackage {
          pname = "svc";
          version = "0.1.0";
          src = ./.;
          nodejs = pkgs.nodejs_20;
          npmDeps = pkgs.importNpmLock { npmRoot = ./.; };
          npmConfigHook = pkgs.importNpmLock.npmConfigHook;
          nativeBuildInputs = [ pkgs.python3 pkgs.gnumake pkgs.gcc ];
          env.npm_config_nodedir = "${pkgs.nodejs_20}";
          buildPhase = "node bin/build.mjs --single";
          installPhase = "install -Dm755 dist/svc-linux-x64 $out/bin/svc";
          # Stripping would cut the injected bundle out of the executable.
          dontStrip = true;
          dontFixup = true;
        };
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [ pkgs.nodejs_20 pkgs.bubblewrap pkgs.slirp4netns pkgs.nftables pkgs.iproute2 pkgs.util-linux pkgs.sqlite pkgs.python3 pkgs.gnumake pkgs.gcc ];
          shellHook = ''
            echo "svc dev shell: node $(node --version), $(bwrap --version), sqlite $(sqlite3 --version | cut -d' ' -f1)"
          '';
        };
      });
    };
}
