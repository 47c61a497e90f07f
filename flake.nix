{
  description = "svc: self-hosted machine service";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
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
